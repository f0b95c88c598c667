"""The aiohttp server of the test web: one handler that renders :meth:`WebModel.respond` and logs the request.

It uses aiohttp's low-level ``web.Server`` (no router, no middlewares) because a benchmark points thousands of
hosts at it and the server shares the machine with the crawler: it should cost little per request.
"""

from __future__ import annotations

import functools
import socket
import time
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestHandler

from webtrawl_testweb.accesslog import AccessLog, LogEntry
from webtrawl_testweb.certs import Certs
from webtrawl_testweb.corpus import Corpus
from webtrawl_testweb.discovery import DiscoveryWeb
from webtrawl_testweb.model import Reply, WebModel
from webtrawl_testweb.pages import link_block, render_page

_METHOD_NOT_ALLOWED = Reply(405, body=b"method not allowed\n")


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket (port 0: ephemeral), bound before the model is made: it needs the port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


class _StampedHandler(RequestHandler):
    """aiohttp's connection protocol, noting when the bytes of the connection's next request were first read: the
    earliest the server sees a request. Its handler starts at least two turns of the event loop later, and on a
    busy machine (the web's thread waiting for a CPU at each turn) that was seen to be up to seconds later.

    One request at a time per connection (HTTP/1.1 without pipelining, as the crawler sends): a request whose
    bytes came before the handler of the one ahead of it took the stamp gets no stamp of its own, and
    :func:`arrival_ns` stamps it when its handler starts, as before. Requests have no body (the web answers GET and
    HEAD; other methods get 405): body bytes read after the handler took the stamp would stamp the connection's next
    request early, which can only make the gap before it look shorter, never hide a violation."""

    __slots__ = ("_first_read_ns",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._first_read_ns = 0

    def data_received(self, data: bytes) -> None:
        if data and not self._first_read_ns:
            self._first_read_ns = time.time_ns()
        super().data_received(data)

    def take_arrival_ns(self) -> int:
        stamp, self._first_read_ns = self._first_read_ns, 0
        return stamp


class StampingServer(web.Server):
    """aiohttp's low-level server whose connections note when each request arrived (:func:`arrival_ns`)."""

    def __call__(self) -> RequestHandler:
        return _StampedHandler(self, loop=self._loop, **self._kwargs)


def arrival_ns(request: web.BaseRequest) -> int:
    """When the request's first bytes were read, if a :class:`StampingServer` noted it; else now. Called once, at
    the start of the request's handler. Never earlier than the client sent the request: see accesslog.py."""
    protocol = request.protocol
    stamp = protocol.take_arrival_ns() if isinstance(protocol, _StampedHandler) else 0
    return stamp or time.time_ns()


def client_port(request: web.BaseRequest) -> int:
    """The client's source port: one per connection, so the log shows which requests shared one."""
    peer = request.transport.get_extra_info("peername") if request.transport is not None else None
    return int(peer[1]) if isinstance(peer, tuple) and len(peer) >= 2 else 0


def request_entry(
    request: web.BaseRequest,
    *,
    host: str,
    scheme: str,
    port: int,
    start_ns: int,
    last_write_ns: int,
    status: int,
    sent: int,
    path: str | None = None,
    kind: str = "",
    decoded: int = 0,
) -> LogEntry:
    """The access-log line of one answered request: it ends at its last write (stamped before the write: see
    accesslog.py), or now if nothing was written."""
    return LogEntry(
        start_ms=start_ns / 1e6,
        end_ms=(last_write_ns or time.time_ns()) / 1e6,
        host=host,
        port=port,
        scheme=scheme,
        method=request.method,
        path=request.raw_path if path is None else path,
        status=status,
        nbytes=sent,
        user_agent=request.headers.get("User-Agent", ""),
        client_port=client_port(request),
        kind=kind,
        decoded=decoded,
    )


def host_name(header: str) -> str:
    name, sep, port = header.rpartition(":")
    return (name if sep and port.isdigit() else header).lower()


class Listeners:
    """An aiohttp low-level server on an http and an https socket, each request to ``_handle``."""

    def __init__(self, certs: Certs) -> None:
        self.certs = certs
        self._runners: list[web.ServerRunner] = []

    async def start(self, http_sock: socket.socket, https_sock: socket.socket) -> None:
        for scheme, sock in (("http", http_sock), ("https", https_sock)):
            port = sock.getsockname()[1]
            handler = functools.partial(self._handle, scheme, port)
            server = StampingServer(handler, access_log=None)
            runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=1.0)
            await runner.setup()
            ssl_context = self.certs.server_context if scheme == "https" else None
            await web.SockSite(runner, sock, ssl_context=ssl_context).start()
            self._runners.append(runner)

    async def stop(self) -> None:
        for runner in self._runners:
            await runner.cleanup()
        self._runners.clear()

    async def _handle(self, scheme: str, port: int, request: web.BaseRequest) -> web.StreamResponse:
        raise NotImplementedError


class WebServer(Listeners):
    """Serves ``model`` on an http and an https socket; every request goes to ``log``."""

    def __init__(
        self, model: WebModel, corpus: Corpus, certs: Certs, log: AccessLog, discovery: DiscoveryWeb | None = None
    ) -> None:
        super().__init__(certs)
        self.model = model
        self.discovery = discovery
        self.corpus = corpus
        self.log = log

    def _body(self, reply: Reply) -> tuple[str, tuple[bytes, ...]]:
        page = reply.page
        if page is None:
            return reply.content_type, (reply.body,)
        if page.corpus is not None and page.corpus < len(self.corpus):
            real = self.corpus.get(page.corpus)
            return real.content_type, (real.head, link_block(page), real.tail)
        return "text/html; charset=utf-8", (render_page(page),)

    async def _handle(self, scheme: str, port: int, request: web.BaseRequest) -> web.StreamResponse:
        start_ns = arrival_ns(request)
        self.log.begin()
        host = host_name(request.host)
        status, sent = 500, 0  # what gets logged if rendering fails (aiohttp then answers 500)
        last_write_ns = 0
        try:
            if request.method in ("GET", "HEAD"):
                reply = None
                if self.discovery is not None:
                    reply = self.discovery.respond(scheme, host, request.raw_path, request.headers)
                if reply is None:
                    reply = self.model.respond(scheme, host, request.raw_path)
            else:
                reply = _METHOD_NOT_ALLOWED
            content_type, chunks = self._body(reply)
            status = reply.status
            resp = web.StreamResponse(status=status)
            resp.headers["Content-Type"] = content_type
            resp.content_length = sum(map(len, chunks))
            if reply.location is not None:
                resp.headers["Location"] = reply.location
            for name, value in reply.headers:
                resp.headers[name] = value
            if reply.page is not None and reply.page.header_nofollow:
                resp.headers["X-Robots-Tag"] = "nofollow"
            last_write_ns = time.time_ns()  # the end is stamped before the last write: see accesslog.py
            await resp.prepare(request)
            if request.method != "HEAD":
                # prepare() has sent the head: with an empty body that was the last write, and a stamp taken after
                # it was late by any stall of this thread (a 301 logged as ending 310 ms after its head went out)
                for chunk in filter(None, chunks):
                    last_write_ns = time.time_ns()
                    await resp.write(chunk)
                    sent += len(chunk)
            await resp.write_eof()
            return resp
        finally:
            self.log.end(
                request_entry(
                    request,
                    host=host,
                    scheme=scheme,
                    port=port,
                    start_ns=start_ns,
                    last_write_ns=last_write_ns,
                    status=status,
                    sent=sent,
                )
            )
