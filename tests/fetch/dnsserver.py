"""A tiny authoritative DNS server on 127.0.0.1 (UDP) so the resolver is tested against real DNS packets.

It answers A queries from a dict, AAAA queries with "no data", and every other name with NXDOMAIN, and counts
the questions it was asked so tests can see what the resolver's cache saved.
"""

from __future__ import annotations

import asyncio
import ipaddress
import struct
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

_A, _AAAA = 1, 28


class DnsServer(asyncio.DatagramProtocol):
    def __init__(self, records: dict[str, list[str]], ttl: int) -> None:
        self.records = records
        self.ttl = ttl
        self.asked: Counter[str] = Counter()
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | int, int]) -> None:
        assert self.transport is not None
        self.transport.sendto(self._answer(data), addr)

    def _answer(self, query: bytes) -> bytes:
        (qid,) = struct.unpack("!H", query[:2])
        pos, labels = 12, []
        while query[pos]:
            length = query[pos]
            labels.append(query[pos + 1 : pos + 1 + length].decode("ascii").lower())
            pos += 1 + length
        pos += 1
        qtype, _qclass = struct.unpack("!HH", query[pos : pos + 4])
        question = query[12 : pos + 4]
        name = ".".join(labels)
        self.asked[name] += 1
        answers = b""
        count = 0
        rcode = 0
        if name not in self.records:
            rcode = 3  # NXDOMAIN
        elif qtype == _A:
            for ip in self.records[name]:
                rdata = ipaddress.IPv4Address(ip).packed
                answers += struct.pack("!HHHIH", 0xC00C, _A, 1, self.ttl, len(rdata)) + rdata
                count += 1
        flags = 0x8180 | rcode  # response, recursion desired + available
        return struct.pack("!HHHHHH", qid, flags, 1, count, 0, 0) + question + answers


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
