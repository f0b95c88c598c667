"""A fetcher process under strain: many Redis commands at once, a fetch task that dies of a bug, and URLs it can
never fetch (no room for them in time, or a host that answers garbage): each ends, recorded."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
from aiohttp import web

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_app, serve_raw
from tests.fixtures.redis_fixtures import TEST_SETTINGS, delete_prefix
from tests.frontier.helpers import host_state, new_urls, queue
from webtrawl.config import CrawlConfig, Limits, RenderOptions
from webtrawl.fetch.args import SESSIONS_PER_SLOT, FetcherArgs, open_frontier
from webtrawl.fetch.base import FetcherBusy, FetcherContext, Fetchers, HttpFetcher
from webtrawl.fetch.batcher import ReleaseBatcher
from webtrawl.fetch.robots import RobotsCache
from webtrawl.fetch.route import RenderRoute
from webtrawl.fetch.testing import FakeFetcher, FakeWeb, PageCollector, answer
from webtrawl.fetch.visit import Visits
from webtrawl.fetch.visitdeps import VisitDeps
from webtrawl.fetch.wire import BIG_BODIES, BIG_BODY
from webtrawl.frontier import AsyncRedisFrontier, FrontierSettings, RedisFrontier
from webtrawl.node.children import CONTEXT
from webtrawl.node.startup import fetcher_args
from webtrawl.pagesend import FETCH_BUG


@pytest.fixture
def settings(redis_client: redis.Redis) -> Iterator[FrontierSettings]:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    yield FrontierSettings(**{**TEST_SETTINGS, "prefix": prefix})
    delete_prefix(redis_client, prefix)


def test_every_task_of_a_full_fetcher_can_use_redis_at_once(redis_url: str, settings: FrontierSettings) -> None:
    """At the start of a broad crawl every task stores a robots.txt at the same moment (and a woken host session
    is a task too): none may fail for want of a connection."""
    cfg = local_cfg(concurrency=128)

    async def body() -> None:
        frontier = await open_frontier(_args(cfg, redis_url, settings, budget=0))
        try:
            tasks = cfg.fetch.concurrency * (1 + SESSIONS_PER_SLOT) + cfg.fetch.lease_batch
            origins = [f"https://h{i}.test" for i in range(tasks)]
            await asyncio.gather(*(frontier.set_robots(o, b"User-agent: *\nDisallow:\n", 60) for o in origins))
            assert await frontier.get_robots(origins[-1]) is not None
        finally:
            await frontier.client.aclose()

    run(body())


class _BrokenRobots:
    """Stands in for the robots cache with a bug: the only way to make a fetch task die of an unexpected error."""

    async def cached(self, origin: str) -> None:
        raise RuntimeError("a bug in the fetch path")

    def take_fetched(self) -> list[Any]:
        return []  # no robots.txt answers to archive


def _args(cfg: CrawlConfig, redis_url: str, settings: FrontierSettings, budget: int) -> FetcherArgs:
    budget_value = CONTEXT.Value("q", budget)
    nowhere = [Path("/nonexistent")]
    return fetcher_args(
        cfg, settings, 0, redis_url=redis_url, parser_sockets=nowhere, stop=CONTEXT.Event(), budget=budget_value
    )


def test_a_task_that_dies_of_a_bug_gives_its_url_back_and_the_host_keeps_its_gap(
    redis_client: redis.Redis, redis_url: str, settings: FrontierSettings
) -> None:
    cfg = local_cfg(politeness={"delay": 10.0})
    sync = RedisFrontier.open(redis_client, settings)
    sync.add(new_urls("http://a.test/1", "http://a.test/2"))
    args = _args(cfg, redis_url, settings, budget=7)

    async def body() -> None:
        frontier = await open_frontier(args)
        web = FakeWeb()
        fetchers = Fetchers(FakeFetcher(web))
        robots: Any = _BrokenRobots()
        route = RenderRoute(RenderOptions(), Limits())
        deps = VisitDeps(frontier, ReleaseBatcher(frontier.release), robots, fetchers, route, PageCollector(), web)
        try:
            (lease,) = await frontier.lease(args.owner, 1)
            await Visits(args, deps).handle(lease)  # the bug is logged, not raised
        finally:
            await frontier.client.aclose()

    run(body())
    counters = sync.counters()
    assert (counters.queued, counters.inflight) == (2, 0)  # given back, not left leased until --lease-ttl
    assert sync.lease("other/f0", 5) == []  # the host waits its gap first
    now_ms = int(redis_client.time()[0]) * 1000
    assert int(host_state(sync, "a.test")["n"]) - now_ms > 5000  # the host's delay counts from the give-back
    # behind the host's other URL, one of its retries used: a URL that meets the bug every time cannot loop
    assert queue(sync, "a.test") == ["0/2", "0.0.1/1"]  # <depth>.<hops>.<retries><path>
    assert args.budget is not None and args.budget.value == 8  # the page was not fetched


def test_a_url_that_meets_a_bug_every_time_ends_recorded_as_fetch_bug(
    redis_client: redis.Redis, redis_url: str, settings: FrontierSettings
) -> None:
    """It was given back to the head of its queue every time, without limit: the crawl never ended."""
    cfg = local_cfg(politeness={"delay": 0.0, "max_retries": 2})
    sync = RedisFrontier.open(redis_client, settings)
    sync.add(new_urls("http://a.test/1"))
    args = _args(cfg, redis_url, settings, budget=100)
    pages = PageCollector()
    web = FakeWeb()

    def deps(frontier: AsyncRedisFrontier) -> VisitDeps:
        robots: Any = _BrokenRobots()
        route = RenderRoute(RenderOptions(), Limits())
        return VisitDeps(
            frontier, ReleaseBatcher(frontier.release), robots, Fetchers(FakeFetcher(web)), route, pages, web
        )

    run(_lease_until_done(args, deps))
    (page,) = pages.pages
    assert page.error == FETCH_BUG
    assert page.error_detail == "RuntimeError: a bug in the fetch path (tried 3 times)"
    assert sync.counters().values.get("retries") == 2


async def _lease_until_done(args: FetcherArgs, deps: Callable[[AsyncRedisFrontier], VisitDeps]) -> None:
    """The fetcher's lease loop over the real frontier, one URL at a time, until nothing is queued (at most 10
    visits: a URL that goes round for ever stops there)."""
    frontier = await open_frontier(args)
    visits = Visits(args, deps(frontier))
    try:
        async with asyncio.timeout(10):
            for _ in range(10):
                while not (leases := await frontier.lease(args.owner, 1)):
                    if (await frontier.counters()).queued == 0:
                        return
                    await asyncio.sleep(0.01)  # the host's next turn (a back-off) is not due yet
                await visits.handle(leases[0])
    finally:
        await frontier.client.aclose()


def _ended_as(sync: RedisFrontier, pages: PageCollector, reason: str) -> None:
    """The URL was tried once and retried --max-retries (2) times, then recorded with ``reason``."""
    (page,) = pages.pages
    assert page.error == reason, page.error_detail
    assert page.error_detail.endswith("(tried 3 times)")
    counters = sync.counters()
    assert (counters.queued, counters.inflight) == (0, 1)  # no longer queued: its record is on its way
    assert counters.values.get("retries") == 2
    assert "f" not in host_state(sync, "a.test")  # the fetcher's load: never a failure of the host


def test_a_big_page_that_never_gets_a_turn_ends_as_a_recorded_error_and_the_crawl_can_end(
    redis_client: redis.Redis, redis_url: str, settings: FrontierSettings
) -> None:
    """A big page behind hosts whose big bodies stall for ever was given back to its queue every time its --total
    ran out waiting for a turn (fetch/wire.py), without limit: the crawl never ended. It now uses a retry each time
    (no host back-off) and is recorded as ``turn-timeout`` once --max-retries are used up."""
    cfg = local_cfg(politeness={"delay": 0.0, "max_retries": 2}, timeouts={"total": 0.5})
    sync = RedisFrontier.open(redis_client, settings)
    args = _args(cfg, redis_url, settings, budget=100)
    pages = PageCollector()
    asked: list[str] = []

    async def big(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(body=b"x" * (BIG_BODY * 2), content_type="text/html")

    app = web.Application()
    app.router.add_get("/big", big)

    async def body() -> None:
        async with serve_app(app) as port, local_client(cfg) as client:
            sync.add(new_urls(f"http://a.test:{port}/big"))
            for _ in range(BIG_BODIES):  # every turn is taken, as by big bodies that stall for ever
                await client._big_bodies.acquire()

            def deps(frontier: AsyncRedisFrontier) -> VisitDeps:
                robots = RobotsCache(frontier, client, cfg.fetch, cfg.politeness, cfg.limits)
                ctx = FetcherContext(cfg.fetch, cfg.rendering, cfg.limits, 60.0, client, robots)
                route = RenderRoute(RenderOptions(), Limits())
                return VisitDeps(
                    frontier, ReleaseBatcher(frontier.release), robots, Fetchers(HttpFetcher(ctx)), route, pages, client
                )

            await _lease_until_done(args, deps)

    run(body())
    assert asked == ["/big"] * 3
    _ended_as(sync, pages, "turn-timeout")


def test_a_url_no_renderer_is_ever_free_for_ends_as_a_recorded_error(
    redis_client: redis.Redis, redis_url: str, settings: FrontierSettings
) -> None:
    """The same for a render that never gets a renderer within its lease's time (FetcherBusy)."""
    cfg = local_cfg(politeness={"delay": 0.0, "max_retries": 2})
    sync = RedisFrontier.open(redis_client, settings)
    sync.add(new_urls("http://a.test/app"))
    args = _args(cfg, redis_url, settings, budget=100)
    pages = PageCollector()
    fake = FakeWeb({"http://a.test/robots.txt": answer(404), "http://a.test/app": FetcherBusy("no free renderer")})

    def deps(frontier: AsyncRedisFrontier) -> VisitDeps:
        robots = RobotsCache(frontier, fake, cfg.fetch, cfg.politeness, cfg.limits)
        route = RenderRoute(RenderOptions(), Limits())
        return VisitDeps(
            frontier, ReleaseBatcher(frontier.release), robots, Fetchers(FakeFetcher(fake)), route, pages, fake
        )

    run(_lease_until_done(args, deps))
    assert fake.requested("http://a.test/app") == 3
    _ended_as(sync, pages, "fetcher-busy")


GARBAGE = {  # an answer the fetcher refuses -> what the page's error_detail says
    "status 000": (b"HTTP/1.1 000 Nothing\r\nContent-Length: 2\r\n\r\nok", "status 000 is not a status code"),
    "a NUL in a header": (b"HTTP/1.1 200 OK\r\nX-Bad: a\x00b\r\nContent-Length: 2\r\n\r\nok", "Invalid HTTP header"),
    "a head over 256 KiB": (
        b"HTTP/1.1 200 OK\r\n" + b"X-Pad: %s\r\n" % (b"p" * 1500) * 200 + b"Content-Length: 2\r\n\r\nok",
        "response head over 256 KiB",
    ),
}


@pytest.mark.parametrize("kind", list(GARBAGE))
def test_a_host_that_answers_garbage_is_tried_twice_per_url_and_backed_off(
    redis_client: redis.Redis, redis_url: str, settings: FrontierSettings, kind: str
) -> None:
    """A head with a NUL (or 300 headers, a 17 KiB line, a head over 256 KiB...) comes the same every time: the URL
    is recorded as ``bad-http`` after one retry (not --max-retries of a ``reset``), and each answer is a failure of
    its host, so a host that answers garbage to every URL is backed off (and parked) as one that fails otherwise."""
    cfg = local_cfg(politeness={"delay": 0.0, "max_retries": 3, "backoff_base": 0.001})
    sync = RedisFrontier.open(redis_client, settings)
    args = _args(cfg, redis_url, settings, budget=100)
    pages = PageCollector()
    asked: list[bytes] = []

    async def garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await read_request(reader)
        asked.append(head.split(b" ")[1])
        if head.startswith(b"GET /robots.txt"):
            writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        else:
            writer.write(GARBAGE[kind][0])
        await writer.drain()

    async def body() -> None:
        async with serve_raw(garbage) as port, local_client(cfg) as client:
            sync.add(new_urls(f"http://a.test:{port}/page"))

            def deps(frontier: AsyncRedisFrontier) -> VisitDeps:
                robots = RobotsCache(frontier, client, cfg.fetch, cfg.politeness, cfg.limits)
                ctx = FetcherContext(cfg.fetch, cfg.rendering, cfg.limits, 60.0, client, robots)
                route = RenderRoute(RenderOptions(), Limits())
                batcher = ReleaseBatcher(frontier.release)
                return VisitDeps(frontier, batcher, robots, Fetchers(HttpFetcher(ctx)), route, pages, client)

            await _lease_until_done(args, deps)

    run(body())
    assert asked == [b"/robots.txt", b"/page", b"/page"]
    (page,) = pages.pages
    assert page.error == "bad-http" and GARBAGE[kind][1] in page.error_detail, page.error_detail
    assert host_state(sync, "a.test")["f"] == "2"  # both answers counted against the host: it is backed off
