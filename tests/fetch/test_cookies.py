"""--cookies against a raw server: a cookie comes back as the server set it, as browsers send it."""

from __future__ import annotations

import asyncio

import pytest

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_raw

# Set-Cookie value as the server sends it -> the Cookie header a browser sends back (the value as set, quotes kept)
SENT_BACK = {
    "base64 padding": (b"s=YWJjZA==", b"s=YWJjZA=="),
    "a path": (b"p=/a/b", b"p=/a/b"),
    "JSON": (b'j={"k":"v"}', b'j={"k":"v"}'),
    "UTF-8": ("u=caf\u00e9".encode(), "u=caf\u00e9".encode()),
    "a comma": (b"c=a,b", b"c=a,b"),
    "quotes": (b'q="abc def"', b'q="abc def"'),
    "quotes around a safe value": (b'q="abc"', b'q="abc"'),
    "an escaped quote": (b'q="a\\"b"', b'q="a\\"b"'),
}


async def _cookies_sent(set_cookie: bytes, urls: tuple[str, str] = ("a.test/first", "a.test/second")) -> list[bytes]:
    """The Cookie header of each of two requests (host and path), each answered with ``Set-Cookie: <set_cookie>``."""
    sent: list[bytes] = []

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            cookie = [line for line in head.split(b"\r\n") if line.lower().startswith(b"cookie:")]
            sent.append(cookie[0].partition(b":")[2].strip() if cookie else b"")
            writer.write(b"HTTP/1.1 200 OK\r\nSet-Cookie: " + set_cookie + b"; Path=/\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()

    cfg = local_cfg(cookies=True, resolve=["*.test=127.0.0.1", "*.co.uk=127.0.0.1"])
    async with serve_raw(server) as port, local_client(cfg) as client:
        for url in urls:
            host, _, path = url.partition("/")
            resp = await client.fetch(f"http://{host}:{port}/{path}")
            assert resp.status == 200 and resp.body == b"ok"
    return sent


def _sent(set_cookie: bytes) -> list[bytes]:
    out: list[list[bytes]] = []

    async def body() -> None:
        out.append(await _cookies_sent(set_cookie))

    run(body())
    return out[0]


@pytest.mark.parametrize("kind", list(SENT_BACK))
def test_a_cookie_is_sent_back_as_the_server_set_it(kind: str) -> None:
    """aiohttp's jar quoted every value with a byte outside SimpleCookie's few legal ones: a base64 session id
    (``=``), a path, JSON or UTF-8 went back as ``s="YWJjZA=="`` (UTF-8 even as ``"caf\\351"``), which a server
    that does not strip quotes (PHP) reads as another value: the session was lost on the next page. With quoting
    off, a quoted value (``q="abc def"``) lost its quotes instead."""
    set_cookie, expected = SENT_BACK[kind]
    assert _sent(set_cookie) == [b"", expected]


def test_a_cookie_that_is_not_utf8_fails_no_page() -> None:
    """A Latin-1 byte in a cookie cannot be sent back as received (aiohttp writes headers as UTF-8): that cookie is
    dropped and the pages are fetched as usual."""
    assert _sent(b"l=caf\xe9") == [b"", b""]


@pytest.mark.parametrize(
    ("domain", "first", "second", "second_gets"),
    [
        (b"co.uk", "shop.example.co.uk", "bank.other.co.uk", b""),  # a public suffix: refused, as browsers do
        (b".test", "a.test", "b.test", b""),
        (b"example.co.uk", "shop.example.co.uk", "www.example.co.uk", b"sid=s3cret"),  # its own site: sent
    ],
)
def test_a_cookie_set_for_a_public_suffix_is_not_sent_to_other_sites(
    domain: bytes, first: str, second: str, second_gets: bytes
) -> None:
    sent: list[list[bytes]] = []

    async def body() -> None:
        sent.append(await _cookies_sent(b"sid=s3cret; Domain=" + domain, (f"{first}/", f"{second}/")))

    run(body())
    assert sent[0] == [b"", second_gets]
