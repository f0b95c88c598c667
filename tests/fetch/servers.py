"""Small real servers on 127.0.0.1 for the fetch and politeness tests: aiohttp apps and raw sockets."""

from __future__ import annotations

import asyncio
import dataclasses
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trustme
from aiohttp import web

from webtrawl.config import CrawlConfig
from webtrawl.fetch.client import HttpClient

RawHandler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def run(coro: Coroutine[Any, Any, None]) -> None:
    """Run one async test body on a fresh loop (no pytest-asyncio needed)."""
    asyncio.run(coro)


def local_cfg(**overrides: Any) -> CrawlConfig:
    """A config that may only reach loopback; names under ``.test`` resolve to 127.0.0.1. ``overrides`` are
    options by name; a dict (``limits={...}``, ``timeouts={...}``) holds more of them."""
    options: dict[str, Any] = {
        "ip_allow": ["127.0.0.0/8"],
        "resolve": ["*.test=127.0.0.1"],
        "user_agent": "webtrawl/0.1 (+https://example.invalid/bot)",
        "connect": 5.0,
        "total": 10.0,
        "robots": 10.0,
    }
    for name, value in overrides.items():
        options.update(value if isinstance(value, dict) else {name: value})
    return CrawlConfig().with_options(**options)


def local_client(cfg: CrawlConfig | None = None, **kwargs: Any) -> HttpClient:
    """The HTTP client a fetcher would build from ``cfg`` (default: :func:`local_cfg`)."""
    cfg = cfg or local_cfg()
    return HttpClient(cfg.fetch, cfg.limits, **kwargs)


@asynccontextmanager
async def serve_app(app: web.Application, ssl_context: ssl.SSLContext | None = None) -> AsyncIterator[int]:
    """Serve ``app`` on an ephemeral loopback port; yields the port."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ssl_context)
    await site.start()
    port = int(runner.addresses[0][1])
    try:
        yield port
    finally:
        await runner.cleanup()


@asynccontextmanager
async def serve_raw(handler: RawHandler) -> AsyncIterator[int]:
    """A raw TCP server for broken HTTP behaviour; yields the port."""
    tasks: set[asyncio.Future[None]] = set()
    writers: set[asyncio.StreamWriter] = set()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        writers.add(writer)
        try:
            await handler(reader, writer)
        except ConnectionError:
            pass  # the client hung up first
        finally:
            writer.close()

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    try:
        yield port
    finally:
        server.close()
        for writer in writers:
            writer.close()  # a handler waiting for the client to hang up now sees EOF
        await asyncio.gather(*tasks, return_exceptions=True)
        await server.wait_closed()


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """The request head (up to the blank line)."""
    return await reader.readuntil(b"\r\n\r\n")


@dataclasses.dataclass
class Tls:
    ca_file: Path
    server_ctx: ssl.SSLContext


def make_tls(tmp_path: Path, *names: str) -> Tls:
    """A throwaway CA (trustme) and a server certificate for ``names``."""
    ca = trustme.CA()
    cert = ca.issue_cert(*names)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_ctx)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return Tls(ca_file=ca_file, server_ctx=server_ctx)
