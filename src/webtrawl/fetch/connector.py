"""The fetcher's connection pool: aiohttp's ``TCPConnector`` whose idle TLS connections give back their read buffer.

uvloop gives each TLS connection a 256 KiB buffer that the socket is read into before decryption (its
``SSLProtocol``); whatever a read wrote there stays resident while the connection waits in the pool for the host's
next turn, and the pool holds hundreds of them. The bytes are scratch, copied out at once, so the buffer's pages
go back to the system when the connection turns idle and are faulted in on its next read (bench_idle.py,
RESULTS.md).
"""

from __future__ import annotations

import asyncio

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ConnectionKey

from webtrawl.heap import release_pages

__all__ = ["Connector", "release_read_buffer"]


class Connector(aiohttp.TCPConnector):
    def _release(self, key: ConnectionKey, protocol: ResponseHandler, *, should_close: bool = False) -> None:
        super()._release(key, protocol, should_close=should_close)
        transport = protocol.transport  # None once aiohttp closed it instead of keeping it
        if transport is not None and not transport.is_closing():
            release_read_buffer(transport)


def release_read_buffer(transport: asyncio.BaseTransport) -> None:
    """Give back the pages of uvloop's TLS read buffer of ``transport``'s connection (nothing for plain TCP, whose
    reads go through the loop's one buffer, or without uvloop)."""
    ssl_protocol = transport.get_extra_info("uvloop.sslproto")
    get_buffer = getattr(ssl_protocol, "get_buffer", None)
    if get_buffer is not None:
        release_pages(get_buffer(1))  # the buffer as it is: get_buffer only grows it for a larger ask
