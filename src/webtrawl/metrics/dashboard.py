"""The web dashboard: a static page (HTML, JS, uPlot shipped in the package: it works offline) and one JSON
document, ``/api/status``, which the page polls every second.

The server never reads Redis itself. Its owner (the node supervisor, or ``trawl status --serve``) polls once a
second whatever the number of viewers and calls :meth:`Dashboard.publish`; the document is encoded once there and
every request gets those bytes. It runs aiohttp on its own event loop in a daemon thread, so the supervisor's
synchronous loop is not touched. Read-only: there is no endpoint that changes anything.

Access: loopback by default. Bound to any other address it needs a token (``--ui-token``), given as
``?token=...`` (the page passes it on to its requests) or ``Authorization: Bearer ...``; the static files (the
page's own code) need none.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import threading
from importlib import resources
from typing import Any

from aiohttp import web

from webtrawl.configcheck import check_access, is_loopback
from webtrawl.errors import InputError

log = logging.getLogger("webtrawl.ui")

_STATIC = {
    "uPlot.iife.min.js": "application/javascript",
    "uPlot.min.css": "text/css",
    "uPlot.LICENSE": "text/plain",
    "dashboard.js": "application/javascript",
    "dashboard.css": "text/css",
}
_SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'",
}


def _asset(name: str) -> bytes:
    return resources.files("webtrawl.metrics").joinpath("static", name).read_bytes()


class Dashboard:
    """``start()`` binds (port 0 picks a free one: see :attr:`port`), ``publish(doc)`` replaces the document."""

    def __init__(self, port: int, bind: str = "127.0.0.1", token: str = "", title: str = "webtrawl") -> None:
        check_access(bind, token)
        self.requested_port = port
        self.bind = bind
        self.token = token
        self.title = title
        self.port = port
        self._body = b'{"at": 0}'
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._assets = {name: _asset(name) for name in _STATIC}
        self._index = _asset("index.html").replace(b"{{title}}", title.encode())

    # --- owner side ---------------------------------------------------------------------------------------------
    def publish(self, doc: dict[str, Any]) -> None:
        self._body = json.dumps(doc, separators=(",", ":"), default=str).encode()

    def start(self) -> Dashboard:
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._serve())
            except BaseException as exc:
                errors.append(exc)
                loop.run_until_complete(self._cleanup())
                loop.close()
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="trawl-ui", daemon=True)
        self._thread.start()
        ready.wait()
        if errors:
            self._thread.join()
            self._loop = self._thread = None  # nothing for stop() to stop
            raise InputError(f"cannot serve the dashboard on {self.bind}:{self.requested_port}: {errors[0]}")
        log.info("dashboard on %s", self.url)
        return self

    @property
    def url(self) -> str:
        host = f"[{self.bind}]" if ":" in self.bind else self.bind
        return f"http://{host}:{self.port}/"

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        self._loop = None
        self._thread = None

    def __enter__(self) -> Dashboard:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- server side -------------------------------------------------------------------------------------------
    async def _serve(self) -> None:
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/", self._page)
        app.router.add_get("/api/status", self._status)
        app.router.add_get("/static/{name}", self._static)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.bind, self.requested_port)
        await site.start()
        server = site._server
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = int(sockets[0].getsockname()[1])

    async def _cleanup(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if not self.token and not _loopback_name(request.host):
            # a page on any site the operator browses can point its own name at 127.0.0.1 (DNS rebinding) and
            # read a loopback dashboard: without a token, only the loopback names are answered
            text = "without --ui-token the dashboard answers only to localhost and 127.0.0.1\n"
            return web.Response(status=403, text=text, headers=_SECURITY_HEADERS)
        if self.token and not request.path.startswith("/static/"):  # the page's own code is no secret
            given = request.query.get("token", "")
            auth = request.headers.get("Authorization", "")
            if auth.startswith("Bearer "):
                given = auth[7:]
            if not hmac.compare_digest(given.encode(), self.token.encode()):
                return web.Response(status=401, text="a token is required: ?token=...\n", headers=_SECURITY_HEADERS)
        response: web.StreamResponse = await handler(request)
        response.headers.update(_SECURITY_HEADERS)
        return response

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(body=self._index, content_type="text/html", charset="utf-8")

    async def _status(self, request: web.Request) -> web.Response:
        return web.Response(body=self._body, content_type="application/json")

    async def _static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in _STATIC:
            raise web.HTTPNotFound()
        return web.Response(body=self._assets[name], content_type=_STATIC[name])


def _loopback_name(host: str) -> bool:
    """Whether a request's Host (``name:port``, ``[::1]:port``) names this machine's loopback."""
    name = host.rpartition("]")[0].lstrip("[") if host.startswith("[") else host.partition(":")[0]
    name = name.rstrip(".").lower()
    return is_loopback(name) or name.endswith(".localhost")
