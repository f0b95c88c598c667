"""A tiny authoritative DNS server on 127.0.0.1 (UDP) so the resolver is tested against real DNS packets.

The server is the test web's own (:class:`webtrawl_testweb.chaosserver.DnsServer`): A records from a dict, AAAA
"no data", NXDOMAIN otherwise, and a count of the questions asked so tests can see what the resolver's cache saved.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from webtrawl_testweb.chaosserver import DnsServer


@asynccontextmanager
async def serve_dns(records: dict[str, list[str]], ttl: int = 300) -> AsyncIterator[tuple[str, DnsServer]]:
    """Yields ``("127.0.0.1:PORT", server)``."""
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_datagram_endpoint(
        lambda: DnsServer(records, ttl), local_addr=("127.0.0.1", 0)
    )
    port = transport.get_extra_info("sockname")[1]
    try:
        yield f"127.0.0.1:{port}", protocol
    finally:
        transport.close()
