"""The server of the realistic web: renders :meth:`RealisticWeb.respond`, trickles slow bodies, counts answers.

``GET /_stats`` with ``Host: 127.0.0.1`` answers the counts of everything served so far by kind (``page``,
``robots``, ``robots-big``, ``fault-slow``, ...) as JSON, so a benchmark can tell how many robots.txt requests
and faults a window of its crawl met without reading the access log.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter

from aiohttp import web

from webtrawl_testweb.accesslog import AccessLog
from webtrawl_testweb.certs import Certs
from webtrawl_testweb.realistic import RealisticWeb, RealReply
from webtrawl_testweb.server import Listeners, arrival_ns, host_name, request_entry

STATS_PATH = "/_stats"
_CHUNK = 256 * 1024
_TRICKLE_STEPS = 8  # writes per second of a slow body
_METHOD_NOT_ALLOWED = RealReply(405, (b"method not allowed\n",), kind="405")


class RealServer(Listeners):
    def __init__(self, web_: RealisticWeb, certs: Certs, log: AccessLog) -> None:
        super().__init__(certs)
        self.web = web_
        self.log = log
        self.counts: Counter[str] = Counter()
        self._latency = random.Random(web_.seed)  # waits only: what is served stays a function of the seed

    def _reply(self, scheme: str, host: str, request: web.BaseRequest) -> RealReply:
        if request.method not in ("GET", "HEAD"):
            return _METHOD_NOT_ALLOWED
        if host in ("127.0.0.1", "localhost") and request.raw_path == STATS_PATH:
            body = json.dumps(dict(self.counts)).encode()
            return RealReply(200, (body,), "application/json", kind="stats")
        accepted = {c.partition(";")[0].strip() for c in request.headers.get("Accept-Encoding", "").lower().split(",")}
        return self.web.respond(scheme, host, request.raw_path, gzip="gzip" in accepted, br="br" in accepted)

    async def _handle(self, scheme: str, port: int, request: web.BaseRequest) -> web.StreamResponse:
        start_ns = arrival_ns(request)
        self.log.begin()
        host = host_name(request.host)
        status, sent, last_write_ns, kind, decoded = 500, 0, 0, "", 0
        try:
            reply = self._reply(scheme, host, request)
            if reply.kind != "stats":
                self.counts[reply.kind] += 1
            status, kind, decoded = reply.status, reply.kind, reply.decoded
            resp = web.StreamResponse(status=status)
            resp.headers["Content-Type"] = reply.content_type
            for name, value in reply.headers:
                resp.headers.add(name, value)  # Set-Cookie may come twice
            if reply.close:
                resp.force_close()
            resp.content_length = sum(map(len, reply.body))
            last_write_ns = time.time_ns()  # the end is stamped before the last write: see accesslog.py
            try:
                if self.web.options.latency_ms and kind != "stats":
                    await asyncio.sleep(self._latency.expovariate(1000.0 / self.web.options.latency_ms))
                await resp.prepare(request)
                if request.method != "HEAD":
                    step = max(1, reply.rate // _TRICKLE_STEPS) if reply.rate else _CHUNK
                    for piece in reply.body:
                        for at in range(0, len(piece), step):
                            if reply.rate and sent:
                                await asyncio.sleep(1 / _TRICKLE_STEPS)
                            last_write_ns = time.time_ns()
                            await resp.write(piece[at : at + step])
                            sent += min(step, len(piece) - at)
                await resp.write_eof()
            except ConnectionError:  # the client gave up (size cap, timeout): normal for faults
                pass
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
                    kind=kind,
                    decoded=decoded,
                )
            )
