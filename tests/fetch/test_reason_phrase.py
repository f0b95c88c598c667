"""A reason phrase with non-ASCII bytes (``HTTP/1.1 404 Nicht gefunden \\xfc``, old servers in latin-1): the page
goes on to the parsers and its WARC response holds the status line as received.

aiohttp reads the phrase as UTF-8 with surrogate escapes; a byte that was not UTF-8 left a lone surrogate in the
page, which the frame to the parsers could not encode: the fetch task died, the URL stayed leased until
``--process-ttl`` and was fetched (and died) again, while the host waited on a lease nobody would use.
"""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

import pytest

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_raw
from webtrawl.fetch.pages import page_from
from webtrawl.messages import Lease, Page
from webtrawl.pagepipe import frame
from webtrawl.store.warc import WarcWriter

BODY = b"<html><title>t</title></html>"


@pytest.mark.parametrize(
    "status_line",
    [b"HTTP/1.1 200 Tr\xe8s bien", "HTTP/1.1 200 Οκ".encode(), b"HTTP/1.1 404 Nicht gefunden \xfc"],
)
def test_a_non_ascii_reason_phrase_reaches_the_parsers_and_the_warc_as_received(
    status_line: bytes, tmp_path: Path
) -> None:
    pages: list[Page] = []

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(status_line + b"\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s" % (len(BODY), BODY))
        await writer.drain()

    async def fetch() -> None:
        async with serve_raw(server) as port, local_client(local_cfg()) as client:
            url = f"http://site.test:{port}/"
            resp = await client.fetch(url)
            pages.append(page_from(Lease(token="n.p0.1", shard=0, host=f"site.test:{port}", url=url), resp))

    run(fetch())
    page = pages[0]
    assert page.reason == status_line.split(b" ", 2)[2].decode("latin-1")
    head, body = frame(page)  # the page as it goes to a parser
    assert len(head) > 0 and list(body) == [BODY]
    writer = WarcWriter(tmp_path, "t", 1 << 30)
    writer.write_pair(page)
    path = writer.current_path
    assert path is not None
    writer.close()
    warc = gzip.decompress(next(tmp_path.iterdir()).read_bytes())
    assert status_line + b"\r\n" in warc
