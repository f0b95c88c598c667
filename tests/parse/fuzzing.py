"""Mutation fuzzing of the parse step: real corpus pages (and the chaos web's pages) cut, flipped, spliced and
re-encoded at random, fed to ``process_page`` with random headers. Used by a short test and by the longer
``benchmarks/fuzz_parse.py`` run; any exception is a bug (``process_page`` must turn every input into a record).
"""

from __future__ import annotations

import dataclasses
import gzip
import random
import time
import zlib
from collections.abc import Callable

import brotli

from webtrawl.config import Limits, Politeness
from webtrawl.fetch.addrpolicy import AddressPolicy
from webtrawl.messages import Lease, Page
from webtrawl.parse import ParseContext, Scope, process_page
from webtrawl.parse.traps import TrapGuard
from webtrawl_testweb import DEFAULT_CORPUS_DIR

CORPUS = DEFAULT_CORPUS_DIR / "pages"
_SNIPPETS = (
    b"<", b">", b"</", b"<a href=", b'"', b"'", b"<!--", b"-->", b"<meta charset=", b"<base href=", b"\x00",
    b"\xff\xfe", b"\xef\xbb\xbf", b"<title>", b"<script>", b"</script>", b"<div>" * 50, b"&#x", b"%", b"\\",
    b'<a href="javascript:', b'<a href="//', b'<a href="http://[::1', b'<a href="http://0x7f.1/', b"\r\n",
)  # fmt: skip
_TYPES = ("text/html", "text/html; charset=utf-8", "text/html; charset=shift_jis", "text/html; charset=bogus",
          "application/xhtml+xml", "", "text/plain", "image/png", "text/html; charset=utf-16")  # fmt: skip
_CODINGS = ("", "gzip", "deflate", "br", "zstd", "gzip, br", "x-compress", "identity")


def corpus_pages(limit: int = 40) -> list[bytes]:
    paths = sorted(CORPUS.glob("*.html.gz"))[:limit]
    pages = [gzip.decompress(p.read_bytes()) for p in paths]
    from webtrawl_testweb.chaos import BEHAVIOURS, ChaosWeb

    web = ChaosWeb(8000, 8443)
    for name in ("sjis-nodecl", "cp1251-meta", "lie-utf8", "bom", "unclosed", "repeat"):
        if name in BEHAVIOURS:
            pages.append(web.respond(f"{name}.chaos.test", "/").body)
    return pages or [b"<html><title>t</title><a href=/x>x</a></html>"]


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to four random edits: cut, flip bytes, insert markup snippets, duplicate or drop a slice."""
    for _ in range(rng.randint(1, 4)):
        n = len(data)
        op = rng.randrange(6)
        at = rng.randrange(n + 1)
        if op == 0:
            data = data[: rng.randrange(n + 1)]
        elif op == 1 and n:
            buf = bytearray(data)
            for _ in range(rng.randint(1, 16)):
                buf[rng.randrange(n)] = rng.randrange(256)
            data = bytes(buf)
        elif op == 2:
            data = data[:at] + rng.choice(_SNIPPETS) * rng.randint(1, 8) + data[at:]
        elif op == 3 and n:
            end = min(n, at + rng.randint(1, 4096))
            data = data[:end] + data[at:end] * rng.randint(1, 4) + data[end:]
        elif op == 4 and n:
            data = data[:at] + data[at + rng.randint(1, 4096) :]
        else:
            data = rng.randbytes(rng.randint(0, 512)) + data
    return data


def _encode(rng: random.Random, body: bytes, coding: str) -> bytes:
    """Encode for the named coding, sometimes wrongly (the header then lies about the body)."""
    if rng.random() < 0.2:
        return body
    first = coding.split(",")[0].strip()
    if first == "gzip":
        out = gzip.compress(body, 1, mtime=0)  # no timestamp: a case is the same bytes for the same seed
    elif first == "deflate":
        out = zlib.compress(body, 1)
    elif first == "br":
        out = brotli.compress(body, quality=1)
    else:
        return body
    return out[: rng.randrange(len(out) + 1)] if rng.random() < 0.2 else out


def make_context() -> ParseContext:
    limits = dataclasses.replace(Limits(), max_decompressed=4 * 1024 * 1024)
    return ParseContext(
        limits=limits,
        politeness=Politeness(),
        product_token="webtrawl",
        scope=Scope("any", [], [], []),
        url_allowed=AddressPolicy().url_allowed,
        traps=TrapGuard(3, 100),
    )


def random_page(rng: random.Random, pages: list[bytes]) -> Page:
    coding = rng.choice(_CODINGS)
    body = _encode(rng, mutate(rng, rng.choice(pages)), coding)
    headers = [("Content-Type", rng.choice(_TYPES))]
    if coding:
        headers.append(("Content-Encoding", coding))
    if rng.random() < 0.2:
        headers.append(
            ("X-Robots-Tag", rng.choice(["nofollow", "webtrawl: noindex", "none", ":,:", "unavailable_after: x"]))
        )
    status = rng.choice((200, 200, 200, 301, 302, 404, 500, 204, 0))
    if status in (301, 302):
        headers.append(("Location", rng.choice(["/next", "ftp://x/", "http://10.0.0.1/", "", "http://[bad", "//h/p"])))
    lease = Lease(
        "n/f0.1-1", 1, "fuzz.example", "http://fuzz.example/dir/page.html", rng.randrange(60), rng.randrange(7)
    )
    return Page(lease=lease, status=status, headers=headers, body=body, truncated=rng.random() < 0.1)


def run(seconds: float, seed: int, *, on_case: Callable[[int], None] | None = None) -> int:
    """Fuzz for ``seconds``; returns the number of cases. Raises the first exception with the case's seed."""
    pages = corpus_pages()
    ctx = make_context()
    deadline = time.monotonic() + seconds
    cases = 0
    while time.monotonic() < deadline:
        case_seed = seed * 1_000_003 + cases
        rng = random.Random(case_seed)
        page = random_page(rng, pages)
        try:
            process_page(page, ctx)
        except Exception as exc:
            raise AssertionError(f"process_page raised on fuzz case {case_seed}: {exc!r}") from exc
        cases += 1
        if on_case is not None:
            on_case(cases)
    return cases
