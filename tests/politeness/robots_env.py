"""A local robots.txt server for many origins (the behaviour of /robots.txt depends on the Host name) and a
RobotsCache on it with a dict store and a clock the tests move: shared by the robots.txt tests."""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web

from tests.fetch.servers import local_cfg, local_client, serve_app
from webtrawl.config import CrawlConfig
from webtrawl.fetch import RobotsCache

RULES = b"""# test robots
User-agent: *
Disallow: /

User-agent: webtrawl
Disallow: /private
Allow: /private/ok
Crawl-delay: 2.5

User-agent: otherbot
Allow: /

User-agent: webtrawl
Disallow: /also-secret
"""
ROBOTS_TTL = 1000.0


class DictStore:
    """The frontier's robots store interface, backed by a dict (counts reads to show the LRU works)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.ttls: dict[str, float] = {}
        self.gets = 0

    async def get_robots(self, origin: str) -> bytes | None:
        self.gets += 1
        return self.data.get(origin)

    async def set_robots(self, origin: str, value: bytes, ttl_s: float) -> None:
        self.data[origin] = value
        self.ttls[origin] = ttl_s


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
HITS = web.AppKey("hits", Counter[str])
BEHAVIOUR = web.AppKey("behaviour", dict[str, Handler])


def _robots_app() -> web.Application:
    """One server for many origins: the behaviour of /robots.txt depends on the Host name."""

    async def text(body: bytes, status: int = 200) -> web.Response:
        return web.Response(body=body, status=status, content_type="text/plain")

    async def hop(request: web.Request) -> web.Response:
        n = int(request.query.get("n", "0"))
        total = int(request.host.split(".")[0].removeprefix("hops"))
        if n < total:
            return web.Response(status=301, headers={"Location": f"/robots.txt?n={n + 1}"})
        return await text(b"User-agent: *\nDisallow: /after-hops\n")

    async def gz(request: web.Request) -> web.Response:
        resp = web.Response(body=gzip.compress(b"User-agent: *\nDisallow: /zipped\n"), content_type="text/plain")
        resp.headers["Content-Encoding"] = "gzip"
        return resp

    async def big(request: web.Request) -> web.Response:
        head = b"User-agent: *\nDisallow: /early\n"
        padding = b"# padding padding padding padding padding padding\n" * 19  # 950 bytes of comments
        return await text(head + padding + b"Disallow: /lemonade-stand\nDisallow: /late\n")

    async def cross(request: web.Request) -> web.Response:
        port = request.url.port
        return web.Response(status=302, headers={"Location": f"http://rules.test:{port}/robots.txt"})

    async def to_bad_port(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "http://rules.test:25/robots.txt"})

    behaviour: dict[str, Handler] = {
        "rules.test": lambda r: text(RULES),
        "missing.test": lambda r: text(b"not here", 404),
        "forbidden.test": lambda r: text(b"go away", 403),
        "down.test": lambda r: text(b"oops", 503),
        "busy.test": lambda r: text(b"slow down", 429),
        "delay.test": lambda r: text(b"User-agent: *\nCrawl-delay: 7\nDisallow: /tmp\n"),
        "hops5.test": hop,
        "hops6.test": hop,
        "gz.test": gz,
        "big.test": big,
        "cross.test": cross,
        "badport.test": to_bad_port,
    }

    async def robots(request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0]
        request.app[HITS][host] += 1
        return await request.app[BEHAVIOUR][host](request)

    app = web.Application()
    app[HITS] = Counter()
    app[BEHAVIOUR] = behaviour
    app.router.add_get("/robots.txt", robots)
    return app


@asynccontextmanager
async def robots_env(
    cfg: CrawlConfig | None = None, **cache_kwargs: object
) -> AsyncIterator[tuple[int, web.Application, RobotsCache, DictStore, Clock]]:
    app = _robots_app()
    cfg = cfg or local_cfg(politeness={"robots_ttl": ROBOTS_TTL})
    store, clock = DictStore(), Clock()
    async with serve_app(app) as port, local_client(cfg) as client:
        cache = RobotsCache(store, client, cfg.fetch, cfg.politeness, cfg.limits, clock=clock, **cache_kwargs)  # type: ignore[arg-type]
        yield port, app, cache, store, clock
