"""The answer of every chaos behaviour to one request (the table of behaviours is in :mod:`.chaos`)."""

from __future__ import annotations

import gzip
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from webtrawl_testweb import chaosbodies as bodies
from webtrawl_testweb.chaosbodies import ATTRIBUTE_SIZE, BOMB_SIZE, HUGE_SIZE, NESTED_DIVS, REDIRECT_CHAIN

if TYPE_CHECKING:
    from webtrawl_testweb.chaos import ChaosWeb


@dataclass(frozen=True, slots=True)
class ChaosReply:
    """What the chaos server sends; ``mode`` says how (see :mod:`webtrawl_testweb.chaosserver`)."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()
    mode: str = "normal"  # normal, slow-head, slow-body, reset, endless, cl-long, cl-short, hang, early-hints
    declared_length: int = -1  # Content-Length to announce when it lies (cl-long, cl-short)


NOT_FOUND = ChaosReply(404, b"not found\n", "text/plain")
_CAL_RE = re.compile(r"/cal/(\d{4})/(\d{2})")
_HOP_RE = re.compile(r"/hop/(\d+)")


def _html(body: bytes, content_type: str = "text/html; charset=utf-8") -> ChaosReply:
    return ChaosReply(body=body, content_type=content_type)


def _status(status: int, *headers: tuple[str, str], body: bytes = b"") -> ChaosReply:
    return ChaosReply(status, body or f"status {status}\n".encode(), "text/plain", headers)


def _redirect(location: str, status: int = 301) -> ChaosReply:
    return _status(status, ("Location", location), body=b"moved\n")


def _not_found() -> ChaosReply:
    return NOT_FOUND


def _page(title: str, *links: str) -> ChaosReply:
    return _html(bodies.utf8_page(title, links))


def _transport(name: str) -> ChaosReply | None:
    page = bodies.utf8_page(name, ("/x/1",)) * 40
    if name == "slow-head":
        return ChaosReply(body=page, mode="slow-head")
    if name == "slow-body":
        return ChaosReply(body=page * 200, mode="slow-body")
    if name == "reset":
        return ChaosReply(body=page * 50, mode="reset")
    if name == "endless":
        return ChaosReply(mode="endless")
    if name == "cl-long":
        return ChaosReply(body=page, mode="cl-long", declared_length=len(page) * 4)
    if name == "cl-short":
        short = b"<html><head><title>short</title></head><body>"
        return ChaosReply(body=short + b'<a href="/x/1">cut</a>' * 50, mode="cl-short", declared_length=len(short))
    if name == "huge":
        return _html(bodies.huge_page(HUGE_SIZE))
    return None


def _encoded(name: str, links: tuple[str, ...]) -> ChaosReply | None:
    key, _, how = name.rpartition("-")
    if key in bodies.ENCODED_TEXTS and how in ("meta", "nodecl"):
        return _html(bodies.encoded_page(key, "meta" if how == "meta" else "none", links), "text/html")
    if name == "cp1251-header":
        return _html(bodies.encoded_page("cp1251", "none", links), "text/html; charset=windows-1251")
    if name == "lie-utf8":  # the header says UTF-8, the bytes are windows-1251
        return _html(bodies.encoded_page("cp1251", "none", links), "text/html; charset=utf-8")
    if name == "lie-latin1":  # the header says ISO-8859-1 (a server default), the page is UTF-8 and says so
        _, title, text = bodies.ENCODED_TEXTS["latin1"]
        body = bodies.utf8_page(title, links).replace(b"<body>", f"<body><p>{text}</p>".encode())
        return _html(body, "text/html; charset=iso-8859-1")
    if name == "bom":
        return _html(
            bodies.utf8_page("BOM page: naïve café 東京", links, meta=False, bom=True),
            "text/html; charset=windows-1251",
        )
    return None


def _trap(web: ChaosWeb, name: str, target: str) -> ChaosReply | None:
    if name == "calendar":
        m = _CAL_RE.fullmatch(target)
        if target == "/":
            return _page("calendar", "/cal/2024/06")
        if m is None:
            return _not_found()
        year, month = int(m.group(1)), int(m.group(2))
        prev = (year, month - 1) if month > 1 else (year - 1, 12)
        nxt = (year, month + 1) if month < 12 else (year + 1, 1)
        return _page(f"calendar {year}-{month:02d}", *(f"/cal/{y:04d}/{mo:02d}" for y, mo in (prev, nxt)))
    if name == "repeat":  # every page links to a/ below itself: /a/a/a/a/...
        if target == "/" or (target.startswith("/a/") and set(target.strip("/").split("/")) == {"a"}):
            return _page("repeat", "a/", "b.html")
        return _page("repeat leaf") if target.endswith("/b.html") else _not_found()
    if name == "session":  # every answer invents new session ids
        path = target.partition("?")[0]
        if path in ("/", "/page", "/about"):
            links = (
                f"/page?sid={secrets.token_hex(8)}",
                f"/about?sid={secrets.token_hex(8)}",
                f"/?sid={secrets.token_hex(8)}",
            )
            return _page("session", *links)
        return _not_found()
    if name == "query":  # /search?q=<n> links to ever more result pages and sort orders
        path, _, query = target.partition("?")
        if path == "/":
            return _page("query", "/search?q=1")
        if path != "/search":
            return _not_found()
        n = int(re.sub(r"\D", "", query.partition("&")[0]) or 0)
        return _page(f"query {n}", f"/search?q={n + 1}", f"/search?q={n + 2}&sort=asc", f"/search?q={n}&sort=desc")
    return None


def _redirects(web: ChaosWeb, name: str, target: str) -> ChaosReply | None:
    if name == "redirect-chain":
        m = _HOP_RE.fullmatch(target)
        n = 0 if target == "/" else int(m.group(1)) if m else -1
        if n < 0 or n > REDIRECT_CHAIN:
            return _not_found()
        return _redirect(f"/hop/{n + 1}") if n < REDIRECT_CHAIN else _page("end of the chain")
    if name == "redirect-loop":
        loop = {"/": "/loop/a", "/loop/a": "/loop/b", "/loop/b": "/loop/a"}
        return _redirect(loop[target], 302) if target in loop else _not_found()
    if target != "/":
        return None
    if name == "redirect-offhost":
        return _redirect(web.url("plain", "/from-offhost"), 302)
    if name == "redirect-scheme":
        return _redirect("ftp://files.chaos.test/pub/file.txt")
    if name == "redirect-private":
        return _redirect(f"http://10.0.0.1:{web.http_port}/admin", 302)
    if name == "redirect-private-name":
        return _redirect(f"http://intranet.{web.dns_domain}:{web.http_port}/", 302)
    return None


def _statuses(name: str) -> ChaosReply | None:
    table: dict[str, Callable[[], ChaosReply]] = {
        "err500": lambda: _status(500),
        "err503": lambda: _status(503),
        "err503-retry-after": lambda: _status(503, ("Retry-After", "1")),
        "err429": lambda: _status(429, ("Retry-After", "1")),
        "err404": lambda: _status(404),
        "err999": lambda: _status(999),  # LinkedIn's answer to a crawler it refuses: read as a 5xx
        "status000": lambda: _status(0),  # a status that is none: refused as curl refuses it (bad-http)
    }
    make = table.get(name)
    return make() if make is not None else None


def _files(name: str) -> ChaosReply | None:
    if name == "gzip-bomb":
        return ChaosReply(body=bodies.gzip_bomb(BOMB_SIZE), headers=(("Content-Encoding", "gzip"),))
    if name == "brotli-bomb":
        return ChaosReply(body=bodies.brotli_bomb(BOMB_SIZE), headers=(("Content-Encoding", "br"),))
    if name == "gzip-twice":  # compressed twice under one Content-Encoding (a proxy compressing a compressed answer)
        page = gzip.compress(gzip.compress(bodies.utf8_page("gzip-twice page", ("/x/1",))))
        return ChaosReply(body=page, headers=(("Content-Encoding", "gzip"),))
    if name == "early-hints":  # a 103 before the answer, whose head has a line browsers skip (no header name)
        page = bodies.utf8_page("early-hints page", ("/x/1",))
        return ChaosReply(body=page, headers=(("X-Powered-By PHP/5.2", ""),), mode="early-hints")
    if name == "pdf":
        return _html(bodies.PDF, "application/pdf")
    if name == "png":
        return _html(bodies.PNG, "image/png")
    if name == "json":
        return _html(bodies.JSON, "application/json")
    if name == "unclosed":
        return _html(bodies.unclosed_page(("/x/1", "/x/2", "x/3")))
    if name == "deep":
        return _html(bodies.deep_page(NESTED_DIVS, "/x/1"))
    if name == "bigattr":
        return _html(bodies.big_attribute_page(ATTRIBUTE_SIZE, "/x/1"))
    return None


def warm_up() -> None:
    """Build the expensive bodies once (they are cached) before the server answers anything."""
    bodies.huge_page(HUGE_SIZE)
    bodies.gzip_bomb(BOMB_SIZE)
    bodies.brotli_bomb(BOMB_SIZE)


def reply_for(web: ChaosWeb, name: str, target: str) -> ChaosReply:
    """The answer of behaviour ``name`` to ``GET target`` (robots.txt and the hub are answered by the web)."""
    if target.startswith("/x/") and name in web.behaviours:
        return _page(f"{name} link target {target[3:]}")
    if name == "robots-redirect" and target == "/rules.txt":
        return _status(200, body=b"User-agent: *\nDisallow: /private\n")
    if name in ("plain", "tls-ok", "expired", "wrongname", "plainhttp") and target == "/":
        return _page("tls ok" if name == "tls-ok" else f"{name} chaos page", "/x/1")
    if name.startswith("robots-") and target in ("/", "/secret", "/late", "/private"):
        return _page(f"{name} page" if target == "/" else f"{name} {target}")
    if name.startswith("robots-") and target == "/a":
        return _page(f"{name} a")
    for found in (
        _transport(name) if target == "/" else None,
        _encoded(name, ("/x/1",)) if target == "/" else None,
        _statuses(name),
        _files(name) if target == "/" else None,
        _redirects(web, name, target),
        _trap(web, name, target),
    ):
        if found is not None:
            return found
    return _not_found()
