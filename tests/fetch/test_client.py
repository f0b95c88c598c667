"""The HTTP client against real local servers: raw bodies, caps, redirects, and broken servers (TLS:
test_client_tls.py)."""

from __future__ import annotations

import asyncio
import gzip
import socket

import pytest
from aiohttp import web

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_app, serve_raw
from webtrawl.errors import (
    BadHttp,
    ConnectError,
    ConnectionReset,
    FetchTimeout,
    PortPolicyError,
    SchemeError,
)
from webtrawl.fetch.wire import BIG_BODIES, BIG_BODY

SEEN = web.AppKey("seen", list[dict[str, str]])
PEERS = web.AppKey("peers", list[str])
PAGE = b"<html><body>" + b"hello crawler " * 500 + b"</body></html>"


def _app() -> web.Application:
    seen: list[dict[str, str]] = []
    peers: list[str] = []

    async def gz(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        peers.append(str(request.transport.get_extra_info("peername") if request.transport else ""))
        resp = web.Response(body=gzip.compress(PAGE), content_type="text/html")
        resp.headers["Content-Encoding"] = "gzip"
        resp.headers["X-First"] = "1"
        resp.headers.add("Set-Cookie", "a=1")
        resp.headers.add("Set-Cookie", "b=2")
        resp.headers["X-Last"] = "2"
        return resp

    async def big(request: web.Request) -> web.Response:
        size = int(request.query.get("size", "100000"))
        return web.Response(body=b"x" * size)

    async def echo(request: web.Request) -> web.Response:
        return web.Response(text=request.raw_path)

    async def redirect(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "/gz"}, text="moved")

    app = web.Application()
    app[SEEN] = seen
    app[PEERS] = peers
    app.router.add_get("/gz", gz)
    app.router.add_get("/big", big)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/echo/{tail:.*}", echo)
    return app


def test_200_body_kept_content_encoded_with_headers_in_order() -> None:
    async def body() -> None:
        app = _app()
        async with serve_app(app) as port:
            cfg = local_cfg()
            async with local_client(cfg) as client:
                resp = await client.fetch(f"http://site.test:{port}/gz")
        assert resp.status == 200
        assert resp.reason == "OK"
        assert resp.http_version == "1.1"
        assert resp.body == gzip.compress(PAGE)  # not decompressed
        assert gzip.decompress(resp.body) == PAGE
        assert resp.header("content-encoding") == "gzip"
        assert not resp.truncated
        assert resp.ip == "127.0.0.1"
        names = [name for name, _ in resp.headers]
        assert names.index("X-First") < names.index("Set-Cookie") < names.index("X-Last")
        assert [v for k, v in resp.headers if k == "Set-Cookie"] == ["a=1", "b=2"]
        sent = dict(resp.request_headers)
        assert sent["User-Agent"] == cfg.fetch.user_agent
        assert sent["Host"] == f"site.test:{port}"
        assert sent["Accept-Encoding"] == "gzip, deflate, br, zstd"
        server_saw = app[SEEN][0]
        assert server_saw["User-Agent"] == cfg.fetch.user_agent
        assert server_saw["Accept-Encoding"] == "gzip, deflate, br, zstd"
        assert resp.fetch_time > 0 and resp.elapsed_ms >= 0

    run(body())


def test_keep_alive_reuses_the_connection() -> None:
    async def body() -> None:
        app = _app()
        async with serve_app(app) as port, local_client(local_cfg()) as client:
            await client.fetch(f"http://site.test:{port}/gz")
            await client.fetch(f"http://site.test:{port}/gz")
        assert len(app[PEERS]) == 2
        assert app[PEERS][0] == app[PEERS][1]  # same client socket

    run(body())


def test_body_over_the_cap_is_cut_and_marked_truncated() -> None:
    async def body() -> None:
        async with serve_app(_app()) as port, local_client(local_cfg()) as client:
            cut = await client.fetch(f"http://site.test:{port}/big?size=100000", max_body=1000)
            assert cut.truncated
            assert cut.body == b"x" * 1000
            exact = await client.fetch(f"http://site.test:{port}/big?size=1000", max_body=1000)
            assert not exact.truncated
            assert exact.body == b"x" * 1000
            after = await client.fetch(f"http://site.test:{port}/big?size=10")  # client still usable
            assert after.body == b"x" * 10

    run(body())


def test_many_big_bodies_at_once_all_arrive_whole_or_cut_and_free_their_turn() -> None:
    # Bodies past BIG_BODY take turns (BIG_BODIES at a time); a cut one must give its turn back too, or the
    # next round would wait forever (the test's timeout).
    size = BIG_BODY * 3

    async def body() -> None:
        async with serve_app(_app()) as port, local_client(local_cfg()) as client:
            for _round in range(3):
                caps = [size if i % 2 else BIG_BODY * 2 for i in range(2 * BIG_BODIES + 2)]
                got = await asyncio.gather(
                    *(client.fetch(f"http://site.test:{port}/big?size={size}", max_body=cap) for cap in caps)
                )
                assert [(len(r.body), r.truncated) for r in got] == [(cap, cap < size) for cap in caps]
                assert all(r.body == b"x" * len(r.body) for r in got)

    run(body())


def test_default_cap_comes_from_the_config() -> None:
    async def body() -> None:
        async with serve_app(_app()) as port, local_client(local_cfg(limits={"max_body": 5000})) as client:
            resp = await client.fetch(f"http://site.test:{port}/big?size=20000")
        assert resp.truncated and len(resp.body) == 5000

    run(body())


def test_canonical_url_is_sent_byte_for_byte() -> None:
    async def body() -> None:
        async with serve_app(_app()) as port, local_client(local_cfg()) as client:
            resp = await client.fetch(f"http://site.test:{port}/echo/x%7Ey?q=a%20b&r=%C3%A9")
        assert resp.body == b"/echo/x%7Ey?q=a%20b&r=%C3%A9"  # not re-quoted to '~'

    run(body())


def test_redirect_is_returned_not_followed() -> None:
    async def body() -> None:
        async with serve_app(_app()) as port, local_client(local_cfg()) as client:
            resp = await client.fetch(f"http://site.test:{port}/redirect")
        assert resp.status == 302
        assert resp.header("Location") == "/gz"
        assert resp.body == b"moved"

    run(body())


def test_total_timeout_when_the_body_never_comes() -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
        await writer.drain()
        await reader.read()  # until the client gives up

    async def body() -> None:
        async with serve_raw(stall) as port, local_client(local_cfg()) as client:
            with pytest.raises(FetchTimeout):
                await client.fetch(f"http://site.test:{port}/", timeout=0.3)

    run(body())


def test_connection_closed_mid_body_is_a_reset() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\nonly ten b")
        await writer.drain()

    async def body() -> None:
        async with serve_raw(hang_up) as port, local_client(local_cfg()) as client:
            with pytest.raises(ConnectionReset):
                await client.fetch(f"http://site.test:{port}/")

    run(body())


@pytest.mark.parametrize(
    "answer",
    [
        b"",  # closes without a word
        # what fetch/tolerant.py does not forgive, as browsers do not
        b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort",  # the body is cut
        b"HTTP/1.1 200 OK\r\nX-Powered-By PHP/5.2\r\nContent-Le",  # a refused head whose end never comes
    ],
)
def test_an_answer_cut_short_is_a_reset(answer: bytes) -> None:
    """The connection ended before the answer did: maybe the network's doing, worth the retries of a reset."""

    async def broken(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()

    async def body() -> None:
        async with serve_raw(broken) as port, local_client(local_cfg()) as client:
            with pytest.raises(ConnectionReset):
                await client.fetch(f"http://site.test:{port}/")

    run(body())


def test_a_request_the_server_hangs_up_on_is_sent_once_unless_its_connection_was_kept_alive() -> None:
    """No answer at all on a new connection (nginx's 444, a bot wall): the try ends as a reset and the crawl tries
    again after the host's back-off. aiohttp sent it again at once on another new connection: the host saw every
    try twice, milliseconds apart. On a kept-alive connection the server may have closed it as the request went out
    (its idle time ran out): that one is sent again on a new connection, as browsers do."""
    requests: list[bytes] = []

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await read_request(reader)
            requests.append(head.split(b" ")[1])
            if head.startswith(b"GET /kept ") and requests.count(b"/kept") == 1:
                return  # the kept-alive connection's idle time ran out as the request came
            if head.startswith(b"GET /hang-up "):
                return  # closes without a word
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()

    async def body() -> None:
        async with serve_raw(server) as port, local_client(local_cfg()) as client:
            with pytest.raises(ConnectionReset, match="ServerDisconnectedError"):
                await client.fetch(f"http://site.test:{port}/hang-up")
            assert requests == [b"/hang-up"]
            assert (await client.fetch(f"http://site.test:{port}/first")).body == b"ok"
            assert (await client.fetch(f"http://site.test:{port}/kept")).body == b"ok"
            assert requests == [b"/hang-up", b"/first", b"/kept", b"/kept"]

    run(body())


BAD_HEADS = {  # what fetch/tolerant.py does not forgive, as browsers do not
    "not http": b"this is not http\r\n\r\n",
    "an HTTP/0.9 answer": b"<html><body>no status line</body></html>",
    "a status past 999": b"HTTP/1.1 99999 OK\r\nContent-Length: 2\r\n\r\nok",
    "lengths that differ": b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nokay",
    "a NUL in a header": b"HTTP/1.1 200 OK\r\nBroken header line\r\nX-Bad: a\x00b\r\nContent-Length: 2\r\n\r\nok",
    "300 headers": b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(300)) + b"\r\n",
    "a header line over 16 KiB": b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * 17_000 + b"\r\nContent-Length: 2\r\n\r\nok",
    "a chunk size that is no number": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nbroken\r\n",
}


@pytest.mark.parametrize("name", list(BAD_HEADS))
def test_an_answer_that_is_not_http_is_bad_http_not_a_reset(name: str) -> None:
    """The server sends the same answer every time: named for what it is (``bad-http``, retried once), not a
    ``reset`` (a network fault, retried --max-retries times)."""

    async def broken(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(BAD_HEADS[name])
        await writer.drain()

    async def body() -> None:
        async with serve_raw(broken) as port, local_client(local_cfg()) as client:
            with pytest.raises(BadHttp, match=r"^not an HTTP/1\.x answer: "):
                await client.fetch(f"http://site.test:{port}/")

    run(body())


@pytest.mark.parametrize("parts", [False, True])
@pytest.mark.parametrize("cap", [10_000_000, 70_000])
@pytest.mark.parametrize("chunked", [True, False])
def test_a_body_written_in_many_pieces_arrives_whole_or_cut_at_the_cap(chunked: bool, cap: int, parts: bool) -> None:
    """Chunked (HTTP chunks of 1 byte to 64 KiB, some split between writes) or with a Content-Length: the body is
    read to its end, whatever blocks the socket gives, and cut exactly at the cap; left in the chunks it came in
    (``parts``), they are the same bytes."""
    sizes = [1, 2, 3, 65536, 7, 1000, 40000, 1, 30000]
    pieces = [bytes([65 + i % 26]) * n for i, n in enumerate(sizes)]
    whole = b"".join(pieces)

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        framing = b"Transfer-Encoding: chunked" if chunked else f"Content-Length: {len(whole)}".encode()
        writer.write(b"HTTP/1.1 200 OK\r\n" + framing + b"\r\n\r\n")
        for piece in pieces:
            data = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece
            for at in range(0, len(data), 5000):
                writer.write(data[at : at + 5000])
                await writer.drain()
        writer.write(b"0\r\n\r\n" if chunked else b"")
        await writer.drain()

    async def body() -> None:
        async with serve_raw(answer) as port, local_client(local_cfg()) as client:
            resp = await client.fetch(f"http://site.test:{port}/", max_body=cap, parts=parts)
        assert resp.body + b"".join(resp.body_parts) == whole[:cap]
        assert not resp.body_parts or (parts and not resp.body and len(resp.body_parts) > 1)
        assert resp.truncated is (cap < len(whole))
        assert client.bytes_read == min(cap, len(whole))

    run(body())


def test_refused_connection_is_a_connect_error() -> None:
    async def body() -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound but not listening: connections are refused
        try:
            async with local_client(local_cfg()) as client:
                with pytest.raises(ConnectError):
                    await client.fetch(f"http://site.test:{port}/")
        finally:
            sock.close()

    run(body())


def test_scheme_and_port_are_checked_before_connecting() -> None:
    async def body() -> None:
        async with local_client(local_cfg()) as client:
            with pytest.raises(SchemeError):
                await client.fetch("ftp://site.test/file")
            with pytest.raises(PortPolicyError):
                await client.fetch("http://site.test:25/")

    run(body())
