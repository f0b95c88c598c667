"""Answers browsers read that aiohttp's parser refuses (fetch/tolerant.py): bytes past the end of an answer (a
Content-Length shorter than the body, a 204/304 or a redirect with a body) are dropped and the connection is not
used again, as browsers and curl do; heads with the faults browsers pass over are read as browsers read them."""

from __future__ import annotations

import asyncio

import pytest

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_raw
from webtrawl.errors import BadHttp

PAGE = "<html><title>café 東京</title></html>".encode()
CHARS = len(PAGE.decode())  # a length counted in characters, not bytes: shorter than the body
BIG = b"<p>" + b"x" * 300_000 + b"</p>"

CASES = {
    "length in characters": (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (CHARS, PAGE),
        200,
        PAGE[:CHARS],
    ),
    "and Connection: close": (
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello world",
        200,
        b"hello",
    ),
    "204 with a body": (b"HTTP/1.1 204 No Content\r\nContent-Length: %d\r\n\r\n%s" % (len(PAGE), PAGE), 204, b""),
    "304 with a body": (b"HTTP/1.1 304 Not Modified\r\n\r\n" + PAGE, 304, b""),
    "redirect with a body": (
        b"HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n<a href=/next>moved</a>",
        302,
        b"",
    ),
    "after an interim answer": (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokay",
        200,
        b"ok",
    ),
    "bare LF line ends": (b"HTTP/1.1 200 OK\nContent-Length: 2\n\nokay", 200, b"ok"),
    "a big body": (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s<html>" % (len(BIG), BIG), 200, BIG),
}


@pytest.mark.parametrize("name", list(CASES))
def test_an_answer_followed_by_more_bytes_is_kept_and_its_connection_closed(name: str) -> None:
    answer, status, body = CASES[name]
    connections: list[int] = []

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(len(connections))
        while not reader.at_eof():
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(answer)
            await writer.drain()

    async def fetch_twice() -> None:
        async with serve_raw(server) as port, local_client(local_cfg()) as client:
            for _ in range(2):
                resp = await client.fetch(f"http://site.test:{port}/")
                assert (resp.status, resp.body, resp.truncated) == (status, body, False)
        assert len(connections) == 2  # the connection is out of step with the server: not reused

    run(fetch_twice())


HEAD_FAULTS = {  # the head's fields after the status line -> the headers read (Transfer-Encoding aside)
    "a line without a colon": (b"X-Powered-By PHP/5.2\r\nContent-Length: 2\r\n", [("Content-Length", "2")]),
    "a blank before the colon": (
        b"Content-Type : text/html\r\nContent-Length: 2\r\n",
        [("Content-Type", "text/html"), ("Content-Length", "2")],
    ),
    "the same length twice": (b"Content-Length: 2\r\nContent-Length: 2\r\n", [("Content-Length", "2")]),
    "the same length listed twice": (b"Content-Length: 2, 2\r\n", [("Content-Length", "2")]),
    "a length beside chunking": (b"Content-Length: 9\r\nTransfer-Encoding: chunked\r\n", []),
    "a length of -1": (b"Content-Length: -1\r\nConnection: close\r\n", [("Connection", "close")]),
    # the "identity" coding of RFC 2616 drafts, which llhttp refuses beside a length; Chrome uses the length
    "a length beside identity": (b"Transfer-Encoding: identity\r\nContent-Length: 2\r\n", [("Content-Length", "2")]),
}


@pytest.mark.parametrize("name", list(HEAD_FAULTS))
@pytest.mark.parametrize("extra", [b"", b"<html>bytes past the end"])
def test_a_head_with_a_fault_browsers_pass_over_is_read_as_they_read_it(name: str, extra: bytes) -> None:
    fields, expected_headers = HEAD_FAULTS[name]
    chunked = b"chunked" in fields
    body = b"2\r\nok\r\n0\r\n\r\n" if chunked else b"ok"

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\n" + fields + b"\r\n" + body + extra)
        await writer.drain()

    async def fetch() -> None:
        async with serve_raw(server) as port, local_client(local_cfg()) as client:
            resp = await client.fetch(f"http://site.test:{port}/")
        unframed = b"-1" in fields  # no length left: the body runs to the connection's end, whatever it holds
        assert (resp.status, resp.body) == (200, b"ok" + extra if unframed else b"ok")
        assert [(k, v.strip()) for k, v in resp.headers if k.lower() != "transfer-encoding"] == expected_headers

    run(fetch())


EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n"


@pytest.mark.parametrize("fault_in", ["the final head", "the interim head"])
def test_a_fault_beside_an_early_hints_answer_is_mended_too(fault_in: str) -> None:
    """A 103 Early Hints (or 100 Continue) before the answer: a fault in either head was bad-http, though the same
    fault without the interim answer is read: the re-parse gave up at the first head with nothing to mend."""
    fault = b"X-Powered-By PHP/5.2\r\n"
    interim = EARLY_HINTS + (fault if fault_in == "the interim head" else b"") + b"\r\n"
    final = b"HTTP/1.1 200 OK\r\n" + (fault if fault_in == "the final head" else b"") + b"Content-Length: 2\r\n\r\nok"

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(interim + final)
        await writer.drain()

    async def fetch() -> None:
        async with serve_raw(server) as port, local_client(local_cfg()) as client:
            resp = await client.fetch(f"http://site.test:{port}/")
        assert (resp.status, resp.body, resp.headers) == (200, b"ok", [("Content-Length", "2")])

    run(fetch())


def test_a_mended_head_with_a_big_body_reads_the_body_to_its_end() -> None:
    """The new parser takes over the connection: the body that comes after the mended head goes to it."""

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nNo colon here\r\nContent-Length: %d\r\n\r\n" % len(BIG))
        for at in range(0, len(BIG), 10_000):
            writer.write(BIG[at : at + 10_000])
            await writer.drain()

    async def fetch() -> None:
        async with serve_raw(server) as port, local_client(local_cfg()) as client:
            resp = await client.fetch(f"http://site.test:{port}/")
        assert (resp.status, resp.body, resp.truncated) == (200, BIG, False)

    run(fetch())


@pytest.mark.parametrize("status_line", [b"HTTP/1.1  200  OK", b"http/1.1 200 OK", b"HTTP/1.1\t200 OK"])
def test_a_status_line_with_extra_blanks_or_in_lower_case_is_read(status_line: bytes) -> None:
    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(status_line + b"\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()

    async def fetch() -> None:
        async with serve_raw(server) as port, local_client(local_cfg()) as client:
            resp = await client.fetch(f"http://site.test:{port}/")
        assert (resp.status, resp.reason, resp.http_version, resp.body) == (200, "OK", "1.1", b"ok")

    run(fetch())


def test_a_head_refused_before_its_end_came_is_read_once_its_end_comes() -> None:
    """On the web a head longer than one TCP segment (~1.4 KB: a big Content-Security-Policy, many cookies) comes
    in pieces; the parser refuses it at the faulty line, before the head's end is there to mend it with. (The pause
    between the pieces makes the split likely on loopback; the answer must be read either way.)"""
    fields = b"".join(b"X-Policy-%d: %s\r\n" % (i, b"p" * 1000) for i in range(8))

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nX-Powered-By PHP/5.2\r\n" + fields)
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(b"Content-Length: 2\r\n\r\nok")
        await writer.drain()

    async def fetch() -> None:
        async with serve_raw(server) as port, local_client(local_cfg()) as client:
            resp = await client.fetch(f"http://site.test:{port}/")
        assert (resp.status, resp.body) == (200, b"ok")
        assert [k for k, _ in resp.headers] == [f"X-Policy-{i}" for i in range(8)] + ["Content-Length"]

    run(fetch())


def test_bytes_that_do_not_start_as_an_answer_fail_at_once_though_the_connection_stays_open() -> None:
    """Only a head that starts as one waits for its end: anything else is refused at once, not at the time limit."""

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"<html>no status line, no blank line")
        await writer.drain()
        await reader.read()  # open until the client gives up

    async def fetch() -> None:
        async with serve_raw(server) as port, local_client(local_cfg(timeouts={"total": 30.0})) as client:
            with pytest.raises(BadHttp):  # a FetchTimeout would mean it waited
                await client.fetch(f"http://site.test:{port}/")

    run(fetch())


def test_a_body_whose_chunking_breaks_fails_at_once_not_at_the_time_limit() -> None:
    """A chunk size that is no number, after the head and part of the body were read: aiohttp closed the connection
    and left the body's read waiting until --total, which then ended as a ``timeout`` (retried, host backed off)."""

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
        await writer.drain()
        await asyncio.sleep(0.1)  # the body's read has begun
        writer.write(b"zz\r\nbroken\r\n")
        await writer.drain()
        await reader.read()  # open until the client gives up

    async def fetch() -> None:
        async with serve_raw(server) as port, local_client(local_cfg(timeouts={"total": 30.0})) as client:
            with pytest.raises(BadHttp, match="chunk size"):  # a FetchTimeout would mean it waited
                await client.fetch(f"http://site.test:{port}/")

    run(fetch())
