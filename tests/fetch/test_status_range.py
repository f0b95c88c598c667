"""Status codes outside 100-599 from a raw server: what the client makes of them."""

from __future__ import annotations

import asyncio

import pytest

from tests.fetch.servers import local_client, read_request, run, serve_raw
from webtrawl.errors import BadHttp
from webtrawl.fetch.response import Response


async def _answer(status: bytes) -> Response:
    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 " + status + b" Whatever\r\nContent-Length: 2\r\n\r\nno")
        await writer.drain()

    async with serve_raw(server) as port, local_client() as client:
        return await client.fetch(f"http://a.test:{port}/")


@pytest.mark.parametrize("status", [b"000", b"099"])
def test_a_status_below_100_is_not_an_answer(status: bytes) -> None:
    """``HTTP/1.1 000`` was taken as status 0, which the crawl reads as "no answer": retried as a network error
    --max-retries times, the host's answer not counted as fetched. curl and Python's http.client refuse it."""

    async def body() -> None:
        with pytest.raises(BadHttp, match=f"status {status.decode()} is not a status code"):
            await _answer(status)

    run(body())


@pytest.mark.parametrize("status", [600, 999])
def test_a_status_past_599_is_an_answer_kept_as_received(status: int) -> None:
    """LinkedIn answers crawlers it refuses with 999: an answer browsers and curl take, recorded with its status."""

    async def body() -> None:
        resp = await _answer(str(status).encode())
        assert resp.status == status and resp.body == b"no"

    run(body())
