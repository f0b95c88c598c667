"""One harness function per parser of untrusted input: bytes in, no result, and an exception only for a bug.

Each function feeds ``data`` to a parser the way the crawler does and lets through only the parser's documented
errors; anything else escaping (or an invariant broken, such as a decoded body past its cap) is a finding. The
atheris drivers (``fuzz/<name>.py``) call them under coverage guidance; ``tests/fuzz/test_regressions.py`` replays
every saved input of ``fuzz/regressions/<name>/`` and ``fuzz/corpus/<name>/`` through them in the normal suite.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import brotli
import zstandard

from webtrawl.addrpolicy import AddressPolicy
from webtrawl.config import Limits, Politeness
from webtrawl.decompress import content_codings, decompress
from webtrawl.errors import BadContent, BadUrl, DecompressionBomb, InputError, SchemeError
from webtrawl.formats import canonicalize
from webtrawl.formats.encoding import choose_encoding, decode_html, header_charset
from webtrawl.messages import Lease, Page
from webtrawl.parse import ParseContext, Scope, process_page
from webtrawl.parse.html import extract, header_directives, refresh_target
from webtrawl.parse.sitemap import parse as parse_sitemap
from webtrawl.parse.traps import TrapGuard
from webtrawl.politeness.backoff import outcome_for, parse_retry_after
from webtrawl.politeness.matcher import Matcher
from webtrawl.politeness.robots import RobotsRules
from webtrawl.politeness.robotstxt import parse as parse_robots
from webtrawl.politeness.robotstxt import path_of
from webtrawl.trywarc import warc_pages

_BASE = "http://fuzz.example/dir/page.html"
_CAP = 1 << 20  # a small decode cap: a bomb is found in microseconds, and the invariant is the same
_CODINGS = ("gzip", "deflate", "br", "zstd", "x-gzip", "identity", "compress")
_NOW = 1_700_000_000.0
_ROBOTS_CAP = 64 * 1024
_REFERENCE_STARS = 3  # and paths of at most 200 characters: the reference stays fast


def _context() -> ParseContext:
    return ParseContext(
        limits=dataclasses.replace(Limits(), max_decompressed=_CAP),
        politeness=Politeness(),
        product_token="webtrawl",
        scope=Scope("any", [], [], []),
        url_allowed=AddressPolicy().url_allowed,
        traps=TrapGuard(3, 100),
        recrawl_after=86400.0,  # sitemaps' and feeds' dates are read too
    )


_CTX = _context()


def _split(data: bytes, parts: int) -> list[bytes]:
    """``data`` cut at NUL bytes into exactly ``parts`` pieces (missing ones empty): one input, several fields."""
    pieces = data.split(b"\0", parts - 1)
    return pieces + [b""] * (parts - len(pieces))


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _page(body: bytes, headers: list[tuple[str, str]], status: int = 200) -> Page:
    return Page(lease=Lease("f/f0.1-1", 0, "fuzz.example", _BASE), status=status, headers=headers, body=body)


def _canon(href: str, base: str | None) -> str | None:
    """canonicalize's result, None for its documented refusals; a canonical URL must stay the same when redone."""
    try:
        out = canonicalize(href, base)
    except (SchemeError, BadUrl):
        return None
    again = canonicalize(out)
    assert again == out, f"canonical form not stable: {href!r} -> {out!r} -> {again!r}"
    return out


def _check_processed(page: Page) -> None:
    out = process_page(page, _CTX)  # documented: every input becomes a record, nothing raises
    assert out.record.url == page.lease.url
    for new in out.new_urls:
        assert new.url.startswith(("http://", "https://")), new.url
        assert canonicalize(new.url) == new.url, f"not canonical: {new.url!r}"


def html(data: bytes) -> None:
    """HTML: charset choice, tree walk, links and their canonical form, then the whole parse step."""
    content_type, body = _split(data, 2) if data[:1] == b"\0" else (b"text/html", data)
    ctype = _text(content_type)[:200]
    choose_encoding(body, ctype)
    text, _, _ = decode_html(body, ctype)
    found = extract(text, "webtrawl")
    base = (_canon(found.base, _BASE) if found.base else None) or _BASE
    for href, _ in found.links:
        _canon(href, base)
    _check_processed(_page(body, [("Content-Type", ctype or "text/html")]))


def url(data: bytes) -> None:
    """A link and a base as a page may write them: canonicalisation is total and idempotent."""
    href, base = _split(data, 2)
    _canon(_text(href), _canon(_text(base), None) or _BASE)
    _canon(_text(href), None)


def robots(data: bytes) -> None:
    """robots.txt parse and match: any body, any path, for our token; and the same verdicts, delay and sitemaps as
    the plain RFC 9309 reference (tests/politeness/robots_reference.py) for every path made of URL characters."""
    from tests.politeness.robots_reference import reference

    body, path = _split(data, 2)
    parsed = parse_robots(body, "webtrawl", max_bytes=_ROBOTS_CAP)
    Matcher(parsed).allowed(path_of("http://fuzz.example" + _text(path)))
    rules = RobotsRules(body, token="webtrawl", max_bytes=_ROBOTS_CAP)
    ref = reference(body, "webtrawl", _ROBOTS_CAP)
    assert rules.crawl_delay == ref.crawl_delay, (rules.crawl_delay, ref.crawl_delay)
    assert rules.sitemaps == ref.sitemaps, (rules.sitemaps, ref.sitemaps)
    if any(pattern.count("*") > _REFERENCE_STARS for _, pattern in ref.rules):
        return  # the reference's regexes backtrack polynomially in the stars: too slow to judge (the engine is not)
    url_path = "/" + "".join(c for c in _text(path) if c.isprintable() and c not in "#?\\ ").lstrip("/")[:200]
    for one in (url_path, "/", "/a", url_path + "/x"):
        assert rules.allowed("http://fuzz.example" + one) is ref.allowed(one), f"verdict differs for {one!r}"


def sitemap(data: bytes) -> None:
    """Sitemaps, sitemap indexes and RSS/Atom feeds (gzip or not): None, or entries within the caps."""
    found = parse_sitemap(data, max_urls=1000, max_bytes=_CAP)
    if found is not None:
        assert len(found.entries) <= 1000
    _check_processed(_page(data, [("Content-Type", "application/xml")]))


_ENCODERS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": lambda b: gzip.compress(b, 1, mtime=0),
    "deflate": lambda b: zlib.compress(b, 1),
    "br": lambda b: brotli.compress(b, quality=1),
    "zstd": lambda b: zstandard.ZstdCompressor(level=1).compress(b),
}


def decoding(data: bytes) -> None:
    """Content-Encoding chains: BadContent or DecompressionBomb for bad input, and never more than the cap."""
    chain = [_CODINGS[b % len(_CODINGS)] for b in data[:1]] + [
        _CODINGS[b % len(_CODINGS)] for b in data[1:2] if b > 200
    ]
    body = data[2:]
    try:
        out = decompress(body, content_codings([", ".join(chain)]), _CAP)
    except (BadContent, DecompressionBomb):
        pass
    else:
        assert len(out) <= _CAP, f"decoded {len(out)} bytes past the cap"
    encode = _ENCODERS.get(chain[0]) if chain else None
    if encode is not None and body:  # and what a server encodes comes back byte for byte (a body that is itself
        # gzip is decoded once more unless its type is a gzip file: decompress._gzip_again)
        again = decompress(encode(body), [chain[0]], _CAP, gzip_inside=False)
        assert again == body, f"{chain[0]} round trip differs"


def headers(data: bytes) -> None:
    """Header values from strangers: Retry-After, Content-Type charset, Content-Encoding, X-Robots-Tag, refresh."""
    value = _text(data)
    seconds = parse_retry_after(value, _NOW)
    assert seconds is None or seconds >= 0, seconds
    outcome = outcome_for(429, None, [("Retry-After", value)], Politeness(), None, now=_NOW)
    assert outcome.retry_after_ms >= 0
    header_charset(value)
    content_codings([value])
    header_directives([value], "webtrawl")
    target = refresh_target(value)
    _canon(target, _BASE)
    _check_processed(_page(b"<a href=/x>x</a>", [("Content-Type", value), ("X-Robots-Tag", value)]))
    _check_processed(_page(b"", [("Location", value)], status=301))


_TMP = Path(os.environ.get("FUZZ_TMP", tempfile.gettempdir()))


def warc(data: bytes) -> None:
    """A WARC file as ``trawl try --warc`` reads it: InputError for a damaged file, every record parsed."""
    path = _TMP / f"fuzz-{os.getpid()}.warc"
    path.write_bytes(data)
    try:
        for _, page in warc_pages(path, None, _CAP):
            assert len(page.body) <= _CAP, f"a {len(page.body)}-byte body past the cap"
            _check_processed(page)
    except InputError:
        pass
    finally:
        path.unlink(missing_ok=True)


HARNESSES: dict[str, Callable[[bytes], None]] = {
    "html": html,
    "url": url,
    "robots": robots,
    "sitemap": sitemap,
    "decoding": decoding,
    "headers": headers,
    "warc": warc,
}
