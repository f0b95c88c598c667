"""A robots.txt answered with bytes that are not HTTP/1.x, with a status outside 100-599, or compressed twice.

Google's robots.txt documentation reads "timeouts, invalid responses, reset or interrupted connections, and HTTP
chunking errors" as server errors, and Heritrix retries a robots.txt fetch that got no usable answer before it
fails the host's URLs: RFC 9309's "unreachable" (complete disallow for now). So a malformed answer is unavailable,
asked again with growing gaps and given up after --robots-give-up failures in a row, as a 5xx is; unlike a page's
``bad-http`` (tried twice), since one answer decides every URL of the host.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Awaitable, Callable

import pytest

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_raw
from tests.politeness.robots_env import Clock, DictStore
from webtrawl.fetch import RobotsCache

ROBOTS_TTL = 1000.0
MALFORMED = {
    "a NUL in a header": b"HTTP/1.1 200 OK\r\nX-Bad: a\x00b\r\nContent-Length: 2\r\n\r\nok",
    "no status line (HTTP/0.9)": b"User-agent: *\nDisallow: /\n",
    "a status of 000": b"HTTP/1.1 000 Nothing\r\nContent-Length: 2\r\n\r\nok",
    "a broken chunk size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nUser-agent: *\r\n0\r\n\r\n",
}


def _answering(raw: bytes, asked: list[int]) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """A raw server that answers every request with ``raw``, noting each in ``asked``."""

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        asked.append(1)
        writer.write(raw)
        await writer.drain()

    return server


@pytest.mark.parametrize("kind", list(MALFORMED))
def test_a_malformed_robots_txt_is_unavailable_and_asked_again_until_given_up(kind: str) -> None:
    asked: list[int] = []
    server = _answering(MALFORMED[kind], asked)

    async def body() -> None:
        cfg = local_cfg(politeness={"robots_ttl": ROBOTS_TTL})
        clock = Clock()
        async with serve_raw(server) as port, local_client(cfg) as client:
            cache = RobotsCache(
                DictStore(),
                client,
                cfg.fetch,
                cfg.politeness,
                cfg.limits,
                retry_base_s=10.0,
                unavailable_limit=3,
                clock=clock,
            )
            origin = f"http://broken.test:{port}"
            for failures, gap in ((1, 10.0), (2, 20.0), (3, ROBOTS_TTL)):
                rules = await cache.fetch(origin)
                assert rules.unavailable and rules.error == "bad-http" and rules.failures == failures
                assert not rules.allowed(f"{origin}/page")  # complete disallow meanwhile
                clock.now += gap - 1
                assert await cache.cached(origin) is rules  # not asked again before its gap
                clock.now += 2
        assert len(asked) == 3

    run(body())


def test_a_robots_txt_answered_999_is_a_server_error() -> None:
    """A status past 599 is read as a 5xx (RFC 9110 15), which RFC 9309 reads as unreachable."""
    server = _answering(b"HTTP/1.1 999 Request denied\r\nContent-Length: 0\r\n\r\n", [])

    async def body() -> None:
        cfg = local_cfg()
        async with serve_raw(server) as port, local_client(cfg) as client:
            cache = RobotsCache(DictStore(), client, cfg.fetch, cfg.politeness, cfg.limits, clock=Clock())
            rules = await cache.fetch(f"http://denied.test:{port}")
        assert rules.unavailable and rules.status == 999 and rules.error == "http-5xx"

    run(body())


def test_a_robots_txt_compressed_twice_is_read() -> None:
    """Compressed twice under one ``Content-Encoding: gzip``: its rules were read from gzip bytes, so none (allow
    all) whatever it said."""
    rules_text = gzip.compress(gzip.compress(b"User-agent: *\nDisallow: /private\n"))

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        head = b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n" % len(rules_text)
        writer.write(head + rules_text)
        await writer.drain()

    async def body() -> None:
        cfg = local_cfg()
        async with serve_raw(server) as port, local_client(cfg) as client:
            cache = RobotsCache(DictStore(), client, cfg.fetch, cfg.politeness, cfg.limits, clock=Clock())
            origin = f"http://twice.test:{port}"
            rules = await cache.fetch(origin)
        assert not rules.allowed(f"{origin}/private/x") and rules.allowed(f"{origin}/public")

    run(body())


def test_a_given_up_robots_txt_forgotten_by_the_store_is_asked_again_counting_anew() -> None:
    """trawl requeue forgets an unavailable robots.txt (node/requeue.py): a fetcher that holds it given up in its
    LRU reads the store again, fetches it anew, and counts its failures from one."""
    asked: list[int] = []
    server = _answering(b"HTTP/1.1 503 Down\r\nContent-Length: 0\r\n\r\n", asked)

    async def body() -> None:
        cfg = local_cfg(politeness={"robots_ttl": ROBOTS_TTL})
        store = DictStore()
        async with serve_raw(server) as port, local_client(cfg) as client:
            cache = RobotsCache(
                store, client, cfg.fetch, cfg.politeness, cfg.limits, unavailable_limit=1, clock=Clock()
            )
            origin = f"http://down.test:{port}"
            given_up = await cache.fetch(origin)
            assert given_up.failures == 1 and await cache.cached(origin) is given_up  # kept for --robots-ttl
            del store.data[origin]
            assert await cache.cached(origin) is None  # to be fetched again
            again = await cache.fetch(origin)
        assert again.unavailable and again.failures == 1 and len(asked) == 2

    run(body())
