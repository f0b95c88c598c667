"""The chaos hosts' server: raw HTTP/1.1 on asyncio streams, so it can lie, stall, reset and never finish.

aiohttp's server would keep the framing honest, which is exactly what these hosts must not do. Every answer
closes the connection (all but ``cl-short`` say ``Connection: close``) so a lie about the length cannot poison the
next response. While
an answer is being sent the server also watches the client's side: when the crawler gives up (timeout, size
cap) and closes, the answer stops at once and the access-log entry ends then, so a politeness check measures
the gap the crawler really kept. A TLS ClientHello arriving on the plain port gets a plain ``400`` back, as
real servers answer, which the client's TLS layer reads as garbage.

:class:`DnsServer` answers A queries for :data:`webtrawl_testweb.chaos.DNS_RECORDS` and NXDOMAIN for any
other name, and remembers every question: a crawl pointed at it (``--nameservers``) resolves for real while
no packet leaves 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import functools
import ipaddress
import socket
import ssl
import struct
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, cast

from webtrawl_testweb.accesslog import AccessLog, LogEntry
from webtrawl_testweb.certs import Certs
from webtrawl_testweb.chaos import DOMAIN, ChaosWeb
from webtrawl_testweb.chaosreplies import ChaosReply, warm_up

_CHUNK = 64 * 1024
_SLOW_BYTES, _SLOW_EVERY = 256, 0.05  # ~5 KB/s
_SLOW_HEAD_S = 120.0
_HANG_S = 300.0
_READ_TIMEOUT_S = 30.0
_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found", 404: "Not Found", 429: "Too Many Requests"}
_REASONS |= {500: "Internal Server Error", 503: "Service Unavailable", 400: "Bad Request"}


def tls_context(certs: Certs) -> ssl.SSLContext:
    """The https listener's context: by SNI an expired certificate, one for another name, or a good one."""
    now = datetime.datetime.now(datetime.UTC)

    def make(*names: str, **dates: datetime.datetime) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        certs.ca.issue_cert(*names, **dates).configure_cert(ctx)  # type: ignore[arg-type]
        return ctx

    special = {
        f"expired.{DOMAIN}": make(
            f"expired.{DOMAIN}",
            not_before=now - datetime.timedelta(days=60),
            not_after=now - datetime.timedelta(days=1),
        ),
        f"wrongname.{DOMAIN}": make("somebody-else.example"),
    }
    default = make(f"*.{DOMAIN}")

    def sni(sock: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _ctx: ssl.SSLContext) -> None:
        found = special.get((server_name or "").lower())
        if found is not None:
            sock.context = found

    default.sni_callback = sni
    return default


class ChaosServer:
    def __init__(self, web: ChaosWeb, certs: Certs, log: AccessLog) -> None:
        self.web = web
        self.certs = certs
        self.log = log
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, http_sock: socket.socket, https_sock: socket.socket) -> None:
        # The bombs and the 12 MB page take a second to build: not on the loop, where they would stall every host.
        await asyncio.get_running_loop().run_in_executor(None, warm_up)
        for scheme, sock, ctx in (("http", http_sock, None), ("https", https_sock, tls_context(self.certs))):
            handler = functools.partial(self._client, scheme, sock.getsockname()[1])
            extra = {"ssl": ctx, "ssl_handshake_timeout": 10.0} if ctx is not None else {}
            self._servers.append(await asyncio.start_server(handler, sock=sock, **extra))  # type: ignore[arg-type]

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for server in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)
        self._servers.clear()

    async def _client(self, scheme: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await self._serve(scheme, port, reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    async def _serve(self, scheme: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        first = await asyncio.wait_for(reader.readexactly(1), _READ_TIMEOUT_S)
        if first == b"\x16":  # a TLS handshake on the plain port: answer in plain HTTP, as real servers do
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            return
        head = first + await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _READ_TIMEOUT_S)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _version = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        host = headers.get("host", "").lower()
        name, sep, hport = host.rpartition(":")
        host = name if sep and hport.isdigit() else host
        start_ns = time.time_ns()
        self.log.begin()
        sent = [0]
        watcher: asyncio.Future[int] | None = None
        reply = self.web.respond(host, target) if method in ("GET", "HEAD") else ChaosReply(405, b"", "text/plain")
        try:
            stamped = _StampedWriter(writer)
            sender = asyncio.ensure_future(
                self._send(reply, stamped, sent, head_only=method == "HEAD")  # type: ignore[arg-type]
            )
            watcher = asyncio.ensure_future(_until_closed(reader))
            try:
                await asyncio.wait({sender, watcher}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in (sender, watcher):
                    t.cancel()
                await asyncio.gather(sender, watcher, return_exceptions=True)
        finally:
            self.log.end(
                LogEntry(
                    start_ms=start_ns / 1e6,
                    end_ms=(stamped.last_write_ns or _closed_at(watcher) or time.time_ns()) / 1e6,  # accesslog.py
                    host=host,
                    port=port,
                    scheme=scheme,
                    method=method,
                    path=target,
                    status=reply.status,
                    nbytes=sent[0],
                    user_agent=headers.get("user-agent", ""),
                )
            )

    async def _send(self, reply: ChaosReply, writer: asyncio.StreamWriter, sent: list[int], *, head_only: bool) -> None:
        mode, body = reply.mode, reply.body
        if mode == "hang":
            await asyncio.sleep(_HANG_S)
            return
        if mode == "slow-head":
            await asyncio.sleep(_SLOW_HEAD_S)
        fields = [("Content-Type", reply.content_type), *reply.headers]
        if mode != "cl-short":  # that one pretends to keep the connection: the extra bytes look like a next answer
            fields.append(("Connection", "close"))
        if mode == "endless":
            fields.append(("Transfer-Encoding", "chunked"))
        else:
            length = reply.declared_length if mode in ("cl-long", "cl-short") else len(body)
            fields.append(("Content-Length", str(length)))
        if mode == "early-hints":
            writer.write(b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload; as=style\r\n\r\n")
        status_line = f"HTTP/1.1 {reply.status:03d} {_REASONS.get(reply.status, 'Status')}\r\n"
        writer.write((status_line + "".join(f"{k}: {v}\r\n" for k, v in fields) + "\r\n").encode("latin-1"))
        await writer.drain()
        if head_only:
            return
        if mode == "endless":
            data = b"<p>and on and on</p>\n" * (_CHUNK // 21)
            chunk = b"%x\r\n%s\r\n" % (len(data), data)
            while True:
                writer.write(chunk)
                sent[0] += len(data)
                await writer.drain()
        elif mode == "slow-body":
            for i in range(0, len(body), _SLOW_BYTES):
                writer.write(body[i : i + _SLOW_BYTES])
                sent[0] += len(body[i : i + _SLOW_BYTES])
                await writer.drain()
                await asyncio.sleep(_SLOW_EVERY)
        elif mode == "cl-short":  # the announced bytes, then (a moment later) the rest as if it were a next answer
            await _write(writer, body[: reply.declared_length], sent)
            await asyncio.sleep(_SLOW_EVERY)
            await _write(writer, body[reply.declared_length :], sent)
        elif mode == "reset":
            await _write(writer, body[: len(body) // 2], sent)
            sock = writer.get_extra_info("socket")
            if sock is not None:  # SO_LINGER 0: close() sends a RST instead of a FIN
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()
        else:
            await _write(writer, body, sent)
        await asyncio.sleep(0)


async def _write(writer: asyncio.StreamWriter, body: bytes, sent: list[int]) -> None:
    for i in range(0, len(body), _CHUNK):
        writer.write(body[i : i + _CHUNK])
        sent[0] += len(body[i : i + _CHUNK])
        await writer.drain()


async def _until_closed(reader: asyncio.StreamReader) -> int:
    """Returns when the client closes its side (the crawler gave up or is done): the time it saw the EOF.

    That is the end of a request answered with nothing (a hang): stamped here, not after the two tasks are
    cancelled and gathered, a few loop turns later (under CPU load ~90 ms, which read as a crawler's short gap)."""
    while await reader.read(_CHUNK):
        pass
    return time.time_ns()


class DnsServer(asyncio.DatagramProtocol):
    """A tiny authoritative DNS server: A records from a dict, NOERROR/no data for AAAA, NXDOMAIN otherwise.

    ``aliases`` are CNAMEs (name -> target name): the answer holds the chain and then the last target's A records,
    as a recursive resolver returns it."""

    def __init__(
        self,
        records: dict[str, list[str]],
        ttl: int = 300,
        resolve: Callable[[str], list[str] | None] | None = None,
        aliases: dict[str, str] | None = None,
    ) -> None:
        self.records = records
        self.resolve = resolve  # answers names not in ``records`` (None: NXDOMAIN)
        self.aliases = aliases or {}
        self.ttl = ttl
        self.asked: Counter[str] = Counter()
        self.transport: asyncio.DatagramTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.DatagramTransport, transport)

    def datagram_received(self, data: bytes, addr: tuple[str | int, int]) -> None:
        if self.transport is not None:
            with contextlib.suppress(Exception):
                self.transport.sendto(self._answer(data), addr)

    def _answer(self, query: bytes) -> bytes:
        (qid,) = struct.unpack("!H", query[:2])
        pos, labels = 12, []
        while query[pos]:
            length = query[pos]
            labels.append(query[pos + 1 : pos + 1 + length].decode("ascii", "replace").lower())
            pos += 1 + length
        pos += 1
        qtype, _qclass = struct.unpack("!HH", query[pos : pos + 4])
        question = query[12 : pos + 4]
        name = ".".join(labels)
        self.asked[name] += 1
        answers, count, rcode = b"", 0, 0
        owner = 0xC00C  # a compression pointer to the question's name
        for _ in range(8):
            target = self.aliases.get(name)
            if target is None:
                break
            rdata = _dns_name(target)
            answers += struct.pack("!HHHIH", owner, 5, 1, self.ttl, len(rdata)) + rdata
            owner = 0xC000 | (12 + len(question) + len(answers) - len(rdata))  # the target's name, just written
            count += 1
            name = target
        addresses = self.records.get(name)
        if addresses is None and self.resolve is not None:
            addresses = self.resolve(name)
        if addresses is None:
            rcode = 3  # NXDOMAIN
        elif qtype == 1:
            for ip in addresses:
                rdata = ipaddress.IPv4Address(ip).packed
                answers += struct.pack("!HHHIH", owner, 1, 1, self.ttl, len(rdata)) + rdata
                count += 1
        return struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, count, 0, 0) + question + answers


def _dns_name(name: str) -> bytes:
    return b"".join(bytes([len(label)]) + label.encode("ascii") for label in name.split(".") if label) + b"\0"


def _closed_at(watcher: asyncio.Future[int] | None) -> int:
    """When :func:`_until_closed` saw the client's EOF, or 0 if it did not finish."""
    if watcher is not None and watcher.done() and not watcher.cancelled() and watcher.exception() is None:
        return watcher.result()
    return 0


class _StampedWriter:
    """A StreamWriter that remembers when the last write began: the access log's end time (see accesslog.py)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self.last_write_ns = 0

    def write(self, data: bytes) -> None:
        self.last_write_ns = time.time_ns()
        self._writer.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._writer, name)
