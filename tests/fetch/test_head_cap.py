"""The bytes of an answer's head are capped (fetch/tolerant.py's MAX_RESPONSE_HEAD, Chrome's 256 KiB): a server that
sends lines each under the per-line limit, but many of them, is refused as ``bad-http`` (a page, and robots.txt),
while a head that fits, even when its end and the body come in one chunk past the cap, is read."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager

import pytest

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_raw
from webtrawl.errors import BadHttp
from webtrawl.fetch import RobotsCache
from webtrawl.fetch.tolerant import MAX_RESPONSE_HEAD

# 200 lines of 1.5 KiB, ~300 KiB: each line far under the 16 KiB line limit, fewer lines than the 256 allowed
HUGE_HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n" + b"".join(
    b"X-Pad-%03d: %s\r\n" % (i, b"p" * 1522) for i in range(200)
)
BODY = b"<p>" + b"x" * 100_000 + b"</p>"


def _head_of(size: int) -> bytes:
    """A head of exactly ``size`` bytes (with its blank line), of 2 KiB lines, for a body of len(BODY)."""
    head = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n" % len(BODY)
    full, last = divmod(size - len(head) - 2, 2048)
    sizes = [2048] * (full - 1) + [2048 + last]  # each line: "X-Fill-NNN: " (12 bytes), its value, CRLF
    head += b"".join(b"X-Fill-%03d: %s\r\n" % (i, b"f" * (n - 14)) for i, n in enumerate(sizes)) + b"\r\n"
    assert len(head) == size
    return head


def _serve(answer: bytes) -> AbstractAsyncContextManager[int]:
    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(answer)
        await writer.drain()
        await reader.read()  # open until the client hangs up: the refusal is the client's, not a close

    return serve_raw(server)


def test_a_head_of_many_lines_over_the_cap_is_bad_http() -> None:
    async def fetch() -> None:
        async with _serve(HUGE_HEAD + b"\r\nok") as port, local_client(local_cfg()) as client:
            with pytest.raises(BadHttp, match="response head over 256 KiB"):
                await client.fetch(f"http://site.test:{port}/")

    run(fetch())


@pytest.mark.parametrize(("size", "fits"), [(MAX_RESPONSE_HEAD, True), (MAX_RESPONSE_HEAD + 1, False)])
def test_a_head_up_to_the_cap_is_read_with_its_body_and_one_byte_more_is_not(size: int, fits: bool) -> None:
    """The whole answer is written at once: the chunk that takes the count past the cap holds the head's end and
    body bytes, which are not head bytes."""

    async def fetch() -> None:
        async with _serve(_head_of(size) + BODY) as port, local_client(local_cfg()) as client:
            if fits:
                resp = await client.fetch(f"http://site.test:{port}/")
                assert (resp.status, resp.body, resp.truncated) == (200, BODY, False)
            else:
                with pytest.raises(BadHttp, match="response head over 256 KiB"):
                    await client.fetch(f"http://site.test:{port}/")

    run(fetch())


class _Store:
    """The little of the frontier's store robots.txt needs."""

    def __init__(self) -> None:
        self.robots: dict[str, bytes] = {}

    async def get_robots(self, origin: str) -> bytes | None:
        return self.robots.get(origin)

    async def set_robots(self, origin: str, data: bytes, ttl_s: float) -> None:
        self.robots[origin] = data


def test_robots_txt_with_a_head_over_the_cap_is_unavailable_as_bad_http() -> None:
    async def fetch() -> None:
        cfg = local_cfg()
        async with _serve(HUGE_HEAD + b"\r\nok") as port, local_client(cfg) as client:
            cache = RobotsCache(_Store(), client, cfg.fetch, cfg.politeness, cfg.limits)  # type: ignore[arg-type]
            rules = await cache.fetch(f"http://site.test:{port}")
        assert rules.unavailable and rules.error == "bad-http"

    run(fetch())
