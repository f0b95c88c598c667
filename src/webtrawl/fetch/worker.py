"""The fetcher process: lease -> robots -> fetch -> release host -> hand the page to a parser.

One asyncio (uvloop) loop per process keeps up to ``concurrency`` leases in flight: this module builds the process's
parts (frontier, HTTP client, robots cache, fetchers by role) and runs the lease loop; what happens to each leased
URL (robots.txt, the fetch, the release, host sessions) is :mod:`webtrawl.fetch.visit`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from webtrawl.errors import RedisUnavailable
from webtrawl.fetch.args import STOP_GRACE_S, FetcherArgs, open_frontier
from webtrawl.fetch.base import FetcherContext, Fetchers, build_fetchers
from webtrawl.fetch.batcher import ReleaseBatcher
from webtrawl.fetch.capacity import Capacity, ceiling
from webtrawl.fetch.client import HttpClient
from webtrawl.fetch.cookies import CookieLeases
from webtrawl.fetch.discovery import AddressGate, robots_sitemaps
from webtrawl.fetch.fence import ABANDON_S, Fence, request_bound
from webtrawl.fetch.robots import RobotsCache
from webtrawl.fetch.route import RenderRoute
from webtrawl.fetch.visit import Visits
from webtrawl.fetch.visitdeps import VisitDeps
from webtrawl.fetch.wake import WakeEvent
from webtrawl.frontier import AsyncRedisFrontier
from webtrawl.frontier.retry import Outage
from webtrawl.heap import FETCHER_KEEP_FREE, TRIM_INTERVAL_S, collect_less, return_freed_buffers, trim_heap
from webtrawl.messages import Lease
from webtrawl.pagesend import PageSender, parsers_caught_up

log = logging.getLogger("webtrawl.fetch")

# How long a fetcher that starts again waits for the parsers to store its previous life's pages (a parser's batch
# takes well under a second; one stuck longer, on a full disk or a Redis away, would hold the restart).
_CATCH_UP_S = 30.0
_IDLE_WAIT = 0.005
_IDLE_MAX = 0.25
# A busy fetcher frees a slot or two at a time; leasing for each would cost a round trip per page. After a lease it
# waits up to _REFILL_MAX_S for a quarter of a lease batch to be free (one round trip for several URLs).
_REFILL_WAIT_S = 0.01
_REFILL_MAX_S = 0.05
_LOOK_BYTES = FETCHER_KEEP_FREE // 4  # body bytes read between two looks at the heap (see HeapLooks)
_TRIM_BACKSTOP_S = 10.0  # the longest between two looks


def run_fetcher(args: FetcherArgs) -> None:
    """Process entry point."""
    return_freed_buffers()
    collect_less()
    try:
        import uvloop

        run: Callable[[Coroutine[Any, Any, None]], None] = uvloop.run
    except ImportError:  # pragma: no cover - uvloop is a dependency; keep working without it
        run = asyncio.run
    try:
        run(_Fetcher(args).run())
    except RedisUnavailable:  # a life started while Redis was away (or a frontier call that gave up) and a stop
        if not args.stop.is_set():
            raise
        log.info("%s: stopped while Redis was away; its leases are taken back on the next start", args.owner)


class HeapLooks:
    """When the fetcher looks at its heap (and trims it if over FETCHER_KEEP_FREE free: heap.trim_heap).

    A look costs a walk of the free chunks (mallinfo2; once that much is free, malloc_trim walks them again at every
    look), and the free heap grows by at most what was allocated since the last one, bodies most of it: a look
    comes after _LOOK_BYTES of bodies read (at most every TRIM_INTERVAL_S, as before) or after _TRIM_BACKSTOP_S,
    so a fetcher that reads little does not walk its heap twice a second for nothing."""

    def __init__(self, read: int, now: float) -> None:
        self._read, self._at = read, now

    def due(self, read: int, now: float) -> bool:
        """Whether to look now, ``read`` body bytes read so far (HttpClient.bytes_read); if so, counts from here."""
        if read - self._read < _LOOK_BYTES and now - self._at < _TRIM_BACKSTOP_S:
            return False
        self._read, self._at = read, now
        return True


async def _trim_heap(http: HttpClient) -> None:
    """Give freed heap pages back now and then (cancelled at the end): bodies and TLS buffers come and go."""
    looks = HeapLooks(http.bytes_read, time.monotonic())
    while True:
        await asyncio.sleep(TRIM_INTERVAL_S)
        if looks.due(http.bytes_read, time.monotonic()):
            trim_heap(FETCHER_KEEP_FREE)


class LeaseSource(Protocol):
    """Where the lease loop gets work (the async Redis frontier; a fake in tests)."""

    async def lease(self, owner: str, max_hosts: int) -> list[Lease]: ...

    def next_lease_in(self) -> float: ...

    async def watch_ready(self, woken: Callable[[], None]) -> None:
        """Call ``woken`` whenever new work may be there to lease, until cancelled (may return: then polls only)."""


class IdleTrim(Protocol):
    """Closes idle connections while leasing is paused (``HttpClient``)."""

    def trim_idle(self, keep: int | None = None) -> int: ...


class _TakeBack:
    """The pages a parser died with (handed to it, not confirmed as stored) go back to their queues at once, where
    they would wait out --process-ttl (ten minutes by default, and a crawl's end with them)."""

    def __init__(self, frontier: AsyncRedisFrontier, owner: str) -> None:
        self.frontier, self.owner = frontier, owner
        self.tasks: set[asyncio.Future[None]] = set()

    def lost(self, leases: list[tuple[int, str]]) -> None:
        task = asyncio.ensure_future(self._take(leases))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _take(self, leases: list[tuple[int, str]]) -> None:
        try:
            taken = await self.frontier.reclaim_tokens(leases)
        except Exception as exc:  # Redis gone for good, or stopping: their deadline brings them back
            log.warning("%s: could not take back the pages of a dead parser (%s)", self.owner, exc)
            return
        log.info("%s took back %d of the %d pages a dead parser had not stored", self.owner, taken, len(leases))

    async def close(self) -> None:
        await asyncio.gather(*self.tasks, return_exceptions=True)


class _Fetcher:
    def __init__(self, args: FetcherArgs) -> None:
        self.args = args
        self.opts = args.fetch
        self.tasks: set[asyncio.Task[None]] = set()
        self._asking = 0  # leases asked for by a lease call still out: paid for from the budget, not yet tasks

    def _report_leases(self) -> None:
        """The leases this fetcher holds or is asking for, for the node's --max-pages stop (stopping.py)."""
        self.args.report(leases=len(self.tasks) + self._asking)

    async def run(self) -> None:
        args = self.args
        outage = Outage(args.owner, stop=args.stop.is_set)  # a stop ends the wait for a Redis that is away
        self.frontier = await open_frontier(args, outage=outage)
        redis = self.frontier.client
        releases = ReleaseBatcher(self.frontier.release)
        # The pages a previous life (killed) handed to the parsers are stored before its leases are taken back, so
        # that only those that never reached one are fetched again: no second record in the file outputs.
        asking = asyncio.ensure_future(parsers_caught_up(args.parser_sockets, _CATCH_UP_S, args.stop.is_set))
        if not (await asyncio.wait([asking], timeout=1.0))[0]:
            log.info("%s waits for the parsers to store what its previous life handed them", args.owner)
        late = await asking
        if late is None:  # told to stop meanwhile: the leases wait for the next life (or their deadline)
            await redis.aclose()
            return
        if late:
            log.warning(
                "%s: %d parser(s) still busy after %gs; taking back the leases anyway", args.owner, late, _CATCH_UP_S
            )
        taken = await self.frontier.reclaim_owner(args.owner)
        if taken:
            log.info("%s took back %d leases of its previous life", args.owner, taken)
        takeback = _TakeBack(self.frontier, args.owner)
        sender = PageSender(args.parser_sockets, on_lost=takeback.lost)
        hints = args.hints(args.extraction, args.rendering) if args.hints else None  # headers, --render auto
        url_headers = hints.headers if hints and hints.has_headers else None
        # --cookies: the crawl's jar, kept in its Redis (fetch/cookies.py)
        async with HttpClient(self.opts, args.limits, url_headers=url_headers, cookie_store=self.frontier) as http:
            self.http = http
            http.proxies.on_none_live = lambda none: args.report(no_proxy=none)  # the node's 'proxy' alert
            gate = None
            if self.frontier.politeness_key == "ip":  # the crawl's key (stored when it was created)
                hold_ms = round((max(self.opts.timeouts.total, self.opts.timeouts.robots) + 10.0) * 1000)
                gate = AddressGate(self.frontier, http.resolver, hold_ms)
            # a spider crawls what its callbacks follow: a sitemap's URLs, routed to parse, would come first
            sitemaps = None if args.discovery.sitemaps == "off" or args.extraction.spider else self._add_sitemaps
            robots = RobotsCache(
                self.frontier,
                http,
                self.opts,
                args.politeness,
                args.limits,
                retry_base_s=args.politeness.robots_retry,
                unavailable_limit=args.politeness.robots_give_up,
                sitemaps_found=sitemaps,
                max_bytes=args.limits.robots_cache,
                politeness_key=self.frontier.politeness_key,
            )
            lease_ttl = args.frontier.lease_ttl_ms / 1000
            ctx = FetcherContext(self.opts, args.rendering, args.limits, lease_ttl, http, robots)
            fetchers = build_fetchers(self.opts.fetcher, ctx)
            route = RenderRoute(args.rendering, args.limits, hints)
            fence = Fence(lease_ttl, request_bound(self.opts, args.rendering) + ABANDON_S, outage)
            deps = VisitDeps(self.frontier, releases, robots, fetchers, route, sender, http, gate, fence)
            trimming = asyncio.create_task(_trim_heap(http))
            try:
                leases = self.frontier if http.cookies is None else CookieLeases(self.frontier, http.cookies)
                await self.serve(leases, Visits(args, deps), fetchers, http)
            finally:
                trimming.cancel()
                await fetchers.close()
        await sender.close()
        await takeback.close()
        await redis.aclose()

    async def serve(self, leases: LeaseSource, visits: Visits, fetchers: Fetchers, idle: IdleTrim) -> None:
        """Lease and visit until stopped, then end what is in flight (fakes fit: fetch/testing.py)."""
        self.leases, self.visits, self.fetchers, self.idle = leases, visits, fetchers, idle
        self.capacity = self._capacity()
        self.work = WakeEvent()  # set when another process's add made hosts ready
        watching = asyncio.create_task(leases.watch_ready(self.work.set))
        try:
            with contextlib.suppress(RedisUnavailable):  # stopping while Redis is away
                await self._lease_loop()
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
        await self._finish_in_flight()

    async def _add_sitemaps(self, origin: str, urls: list[str]) -> None:
        new = robots_sitemaps(origin, urls, self.http.policy)
        if new:
            await self.frontier.add(new)

    async def _finish_in_flight(self) -> None:
        """Stop: let running requests end for a short grace, then abandon the rest (see Visits.handle)."""
        self.visits.stopping.set()
        if not self.tasks:
            return
        _, pending = await asyncio.wait(set(self.tasks), timeout=STOP_GRACE_S)
        if pending:
            log.info(
                "%s: abandoning %d unfinished requests; their URLs go back to their queues",
                self.args.owner,
                len(pending),
            )
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    def _capacity(self) -> Capacity:
        """The slots: more than --concurrency while the CPUs have room (fetch/capacity.py)."""
        rendering = self.args.rendering
        if rendering.render == "always":  # every page waits for one of the few renderers: lease no more than fit
            fixed = min(self.opts.concurrency, 2 * rendering.effective_renderers())
            return Capacity(fixed, fixed)
        return Capacity(self.opts.concurrency, ceiling(self.opts))

    async def _lease_loop(self) -> None:
        capacity = self.capacity
        refill = min(capacity.floor, self.opts.lease_batch) // 4
        refill_until = 0.0
        visits = self.visits
        while not self.args.stop.is_set():
            free = capacity.current() - (len(self.tasks) - visits.sleeping)
            if free <= 0:
                capacity.full()  # every slot in use (not renders queued: more slots would not help them)
            if self.fetchers.waiting:
                free = 0  # renders are queued: a new lease could wait for a renderer past its lease's end
            if free <= 0:
                visits.slot_freed.clear()
                await visits.slot_freed.wait_at_most(_IDLE_MAX)  # wake now and then: a stop must not wait for a slot
                continue
            if free < refill and time.monotonic() < refill_until:
                await asyncio.sleep(_REFILL_WAIT_S)
                continue
            if any(pause.is_set() for pause in self.args.pauses):
                # In-flight fetches go on; nothing new until the pause ends. Idle connections (but those of sleeping
                # host sessions, the most recent) are closed: over --max-memory their buffers are what can go.
                self.idle.trim_idle(keep=visits.sleeping)
                await asyncio.sleep(_IDLE_MAX)
                continue
            # Announced before the budget is taken: the node never sees an empty budget and nothing in flight
            # while leases it paid for are on their way (it would stop short of --max-pages).
            # A task that ends while the lease call is out reports too (_done): it counts the asked leases as well,
            # or the node saw the budget gone and no lease (a loaded node stopped at 1 page of --max-pages 3).
            self._asking = min(free, self.opts.lease_batch)
            self._report_leases()
            want = self.args.take_budget(self._asking)
            if want == 0:
                self._asking = 0
                self._report_leases()
                await asyncio.sleep(_IDLE_MAX)
                continue
            asked = time.monotonic()  # the leases' TTL runs from a moment after this one in Redis
            self.work.clear()  # work that shows up while this call is out ends the wait below at once
            try:
                leases = await self.leases.lease(self.args.owner, want)
            except BaseException:  # a stop while Redis is away, or a bug that ends this life: not paid, not asked
                self.args.give_back_budget(want)
                self._asking = 0
                self._report_leases()
                raise
            visits.deps.fence.leased((lease.token for lease in leases), asked)
            refill_until = time.monotonic() + _REFILL_MAX_S
            self.args.give_back_budget(want - len(leases))
            if not leases:
                self._asking = 0
                self._report_leases()
                # Nothing ready: wait until the frontier expects a host to be, or another process's add says so.
                await self.work.wait_at_most(min(max(self.leases.next_lease_in(), _IDLE_WAIT), _IDLE_MAX))
                continue
            for lease in leases:
                task = asyncio.create_task(visits.handle(lease))
                self.tasks.add(task)
                task.add_done_callback(self._done)
            self._asking = 0
            self._report_leases()

    def _done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        self.visits.slot_freed.set()
        self._report_leases()
        if not task.cancelled() and task.exception() is not None:
            # A bug, not a fetch failure: the lease will expire and the URL will be tried again.
            log.error("fetch task failed", exc_info=task.exception())
