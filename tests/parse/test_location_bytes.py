"""A ``Location`` with non-ASCII bytes, from a real server through the fetch client to the redirect's target.

Servers send such URLs as raw bytes, nearly always UTF-8 (``Location: /café/東京``); browsers and curl read them
as UTF-8 and ask for ``/caf%C3%A9/%E6%9D%B1%E4%BA%AC``. The client hands header values over as latin-1 text, so
each byte must not be encoded a second time (``/caf%C3%83%C2%A9...``: a URL the server never named). Bytes that
are not UTF-8 are sent back as they came, percent-encoded (curl's ``/caf%E9``).
"""

from __future__ import annotations

import asyncio

import pytest

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_raw
from tests.parse.helpers import make_ctx
from tests.politeness.robots_env import Clock, DictStore
from webtrawl.fetch import RobotsCache
from webtrawl.fetch.pages import page_from
from webtrawl.messages import Lease
from webtrawl.parse import process_page

CASES = [
    ("/café/東京".encode(), "/caf%C3%A9/%E6%9D%B1%E4%BA%AC"),
    ("/search?q=naïve".encode(), "/search?q=na%C3%AFve"),
    (b"/caf\xe9", "/caf%E9"),  # latin-1, not UTF-8: the byte as it came
    ("//bücher.test:{port}/ü".encode(), "http://xn--bcher-kva.test:{port}/%C3%BC"),  # a host in UTF-8: IDNA
]


@pytest.mark.parametrize(("location", "expected"), CASES)
def test_a_redirect_to_a_non_ascii_location_goes_where_the_server_said(location: bytes, expected: str) -> None:
    async def redirect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        port = writer.get_extra_info("sockname")[1]
        target = location.replace(b"{port}", str(port).encode())
        writer.write(b"HTTP/1.1 302 Found\r\nLocation: " + target + b"\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()

    async def body() -> None:
        async with serve_raw(redirect) as port, local_client(local_cfg()) as client:
            url = f"http://site.test:{port}/from"
            resp = await client.fetch(url)
            lease = Lease(token="n.p0.1", shard=0, host=f"site.test:{port}", url=url)
            out = process_page(page_from(lease, resp), make_ctx())
            want = expected.format(port=port)
            if want.startswith("/"):
                want = f"http://site.test:{port}{want}"
            assert out.record.error is None
            assert out.record.redirect == want
            assert [new.url for new in out.new_urls] == [want]

    run(body())


def test_robots_txt_redirected_to_a_utf8_location_is_read_from_there() -> None:
    asked: list[bytes] = []

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while not reader.at_eof():
            try:
                head = await read_request(reader)
            except asyncio.IncompleteReadError:
                return  # the client closed its idle connection
            target = head.split(b" ", 2)[1]
            asked.append(target)
            if target == b"/robots.txt":
                moved = "HTTP/1.1 301 Moved\r\nLocation: /règles.txt\r\nContent-Length: 0\r\n\r\n"
                writer.write(moved.encode())
            elif target == b"/r%C3%A8gles.txt":
                rules = b"User-agent: *\nDisallow: /secret\n"
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(rules), rules))
            else:
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
            await writer.drain()

    async def body() -> None:
        cfg = local_cfg(politeness={"delay": 0.0})
        async with serve_raw(server) as port, local_client(cfg) as client:
            cache = RobotsCache(DictStore(), client, cfg.fetch, cfg.politeness, cfg.limits, clock=Clock())  # type: ignore[arg-type]
            rules = await cache.fetch(f"http://site.test:{port}")
            assert asked == [b"/robots.txt", b"/r%C3%A8gles.txt"]
            assert not rules.allowed(f"http://site.test:{port}/secret")
            assert rules.allowed(f"http://site.test:{port}/open")

    run(body())
