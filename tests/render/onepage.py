"""One page rendered by a real Chromium through the browser fetcher, served by a raw server (its head as given)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

from tests.fetch.servers import local_cfg, local_client, read_request, serve_raw
from webtrawl.config import RenderOptions
from webtrawl.fetch.base import FetchRequest
from webtrawl.fetch.render.fetcher import BrowserFetcher
from webtrawl.fetch.response import Response
from webtrawl.politeness import RobotsRules

HTML_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"


async def render_one(body: bytes, head: bytes = HTML_HEAD, chromium: Path | None = None) -> Response:
    """``--render always`` of a page answered with ``head`` (the status line and fields, without the length), by
    ``chromium`` (``--chromium``) or the one on PATH."""

    async def server(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await writer.drain()

    cfg = local_cfg()
    opts = RenderOptions(render="always", chromium=chromium or Path(shutil.which("chromium") or "chromium"))
    async with serve_raw(server) as port, local_client(cfg) as client:
        robots: Any = None  # the page's own origin only: no other robots.txt is asked for
        browser = BrowserFetcher(opts, cfg.fetch, cfg.limits, 300.0, client, robots)
        try:
            return await browser.fetch(FetchRequest(f"http://a.test:{port}/", "always"), RobotsRules(b""))
        finally:
            await browser.close()
