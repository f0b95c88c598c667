"""The fetcher process: lease -> robots -> fetch -> release host -> hand the page to a parser.

One asyncio (uvloop) loop per process keeps up to ``concurrency`` leases in flight. The order of the two frontier
writes matters: the host is released (its next-allowed time set from the end of *this* request) before the page is
sent on, so the parser's ``complete`` always finds the lease in its KEEP state.

Host sessions: a broad crawl comes back to a host long after its idle connection was closed, so most fetches paid a
new TCP + TLS handshake (the largest item of a fetcher's profile). A release may ask to *hold* the host: the frontier
then leases the host's next URL to this fetcher at once, due at the host's next-allowed time, and the task sleeps
until then and fetches it over the connection it still has open, up to ``session_pages`` pages in a row. Sleeping
sessions do not count against ``concurrency`` (they send nothing); politeness is the frontier's as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from webtrawl.errors import PolicyError, RedisUnavailable, TransportError
from webtrawl.fetch.args import SESSIONS_PER_SLOT, STOP_GRACE_S, FetcherArgs, open_frontier
from webtrawl.fetch.base import Fetcher, FetcherBusy, FetchRequest, HttpFetcher
from webtrawl.fetch.batcher import ReleaseBatcher
from webtrawl.fetch.client import HttpClient, Response
from webtrawl.fetch.discovery import AddressGate, robots_sitemaps
from webtrawl.fetch.fence import FENCE_MARGIN_S, request_bound
from webtrawl.fetch.pages import host_gap_ms, page_from, release_counters, reusable
from webtrawl.fetch.robots import RobotsCache
from webtrawl.fetch.route import RenderRoute
from webtrawl.fetch.rulehints import RuleHints
from webtrawl.frontier import Held, Release, Stale, UrlAction
from webtrawl.frontier.retry import Outage
from webtrawl.heap import TRIM_INTERVAL_S, return_freed_buffers, trim_heap
from webtrawl.messages import Lease, Page
from webtrawl.pagepipe import PageSender
from webtrawl.parse.recrawl import conditional_headers
from webtrawl.politeness import HostOutcome, RobotsRules, jittered, outcome_for

if TYPE_CHECKING:
    from webtrawl.fetch.render.fetcher import BrowserFetcher

log = logging.getLogger("webtrawl.fetch")

_IDLE_WAIT = 0.005
# A server sees our request end a little after we do (its last write returns after our last read): keeping the gap
# a few milliseconds longer than configured makes it hold from the server's side too.
_GAP_MARGIN_MS = 10
_IDLE_MAX = 0.25
# A busy fetcher frees a slot or two at a time; leasing for each would cost a round trip per page. After a lease it
# waits up to _REFILL_MAX_S for a quarter of a lease batch to be free (one round trip for several URLs).
_REFILL_WAIT_S = 0.01
_REFILL_MAX_S = 0.05


def run_fetcher(args: FetcherArgs) -> None:
    """Process entry point."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when we stop
    return_freed_buffers()
    try:
        import uvloop

        uvloop.run(_Fetcher(args).run())
    except ImportError:  # pragma: no cover - uvloop is a dependency; keep working without it
        asyncio.run(_Fetcher(args).run())


async def _trim_heap() -> None:
    """Give freed heap pages back now and then (cancelled at the end): bodies and TLS buffers come and go."""
    while True:
        await asyncio.sleep(TRIM_INTERVAL_S)
        trim_heap()


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class _Fetcher:
    def __init__(self, args: FetcherArgs) -> None:
        self.args = args
        self.opts = args.fetch
        self.pol = args.politeness
        self.tasks: set[asyncio.Task[None]] = set()
        self.sleeping = 0  # tasks waiting for their held host's next turn
        self._unreleased: set[str] = set()  # tokens of leases this process holds and has not released yet
        self._gaps: dict[str, int] = {}  # token -> the host's politeness gap (ms), once its robots.txt is known
        self._deadlines: dict[str, float] = {}  # token -> when its lease may expire (monotonic, on the safe side)
        self._fence_s = request_bound(args.fetch, args.rendering) + FENCE_MARGIN_S  # lease left to start a request
        self._lease_ttl_s = args.frontier.lease_ttl_ms / 1000.0
        self._stopping = asyncio.Event()  # set when leasing stops: host sessions stop waiting for their turn
        self._slot_freed = asyncio.Event()
        self.gate: AddressGate | None = None  # --politeness-key ip: the address gates (set in run())

    def _take_budget(self, wanted: int) -> int:
        budget = self.args.budget
        if budget is None:
            return wanted
        with budget.get_lock():
            granted = max(0, min(wanted, budget.value))
            budget.value -= granted
            return granted

    def _give_back_budget(self, count: int) -> None:
        if self.args.budget is not None and count:
            with self.args.budget.get_lock():
                self.args.budget.value += count

    async def run(self) -> None:
        outage = Outage(self.args.owner, stop=self.args.stop.is_set)  # a stop ends the wait for a Redis away
        self.frontier = await open_frontier(self.args, outage=outage)
        redis = self.frontier.client
        self.releases = ReleaseBatcher(self.frontier.release)
        taken = await self.frontier.reclaim_owner(self.args.owner)
        if taken:
            log.info("%s took back %d leases of its previous life", self.args.owner, taken)
        self.sender = PageSender(self.args.parser_sockets)
        hints = RuleHints.from_config(
            self.args.extraction, self.args.rendering
        )  # a rules file's headers, and what --render auto asks of it
        url_headers = hints.headers if hints and hints.has_headers else None
        discovery, extraction = self.args.discovery, self.args.extraction
        async with HttpClient(self.opts, self.args.limits, url_headers=url_headers) as http:
            self.http = http
            if self.frontier.politeness_key == "ip":  # the crawl's key (stored when it was created)
                hold_ms = round((max(self.opts.timeouts.total, self.opts.timeouts.robots) + 10.0) * 1000)
                self.gate = AddressGate(self.frontier, http.resolver, hold_ms)
            self.robots = RobotsCache(
                self.frontier,
                http,
                self.opts,
                self.pol,
                self.args.limits,
                retry_base_s=self.pol.robots_retry,
                unavailable_limit=self.pol.robots_give_up,
                # a spider crawls what its callbacks follow: a sitemap's URLs, routed to parse, would come first
                sitemaps_found=None if discovery.sitemaps == "off" or extraction.spider else self._add_sitemaps,
                max_bytes=self.args.limits.robots_cache,
            )
            self.route = RenderRoute(self.args.rendering, self.args.limits, hints)
            self.plain: Fetcher = HttpFetcher(http)
            self.browser: BrowserFetcher | None = None
            if self.route.on:  # Playwright is imported only here, in a fetcher that renders
                from webtrawl.fetch.render import open_browser_fetcher

                self.browser = open_browser_fetcher(
                    self.args.rendering,
                    self.opts,
                    self.args.limits,
                    self.args.frontier.lease_ttl_ms / 1000,
                    http,
                    self.robots,
                )
            trimming = asyncio.create_task(_trim_heap())
            try:
                with contextlib.suppress(RedisUnavailable):  # stopping while Redis is away
                    await self._lease_loop()
                await self._finish_in_flight()
            finally:
                trimming.cancel()
                if self.browser is not None:
                    await self.browser.close()
        await self.sender.close()
        await redis.aclose()

    async def _add_sitemaps(self, origin: str, urls: list[str]) -> None:
        new = robots_sitemaps(origin, urls, self.http.policy)
        if new:
            await self.frontier.add(new)

    async def _finish_in_flight(self) -> None:
        """Stop: let running requests end for a short grace, then abandon the rest (see _handle)."""
        self._stopping.set()
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

    async def _lease_loop(self) -> None:
        capacity = self.opts.concurrency
        if (
            self.args.rendering.render == "always"
        ):  # every page waits for one of the few renderers: lease no more than fit
            capacity = min(capacity, 2 * self.args.rendering.effective_renderers())
        refill = min(capacity, self.opts.lease_batch) // 4
        refill_until = 0.0
        while not self.args.stop.is_set():
            free = capacity - (len(self.tasks) - self.sleeping)
            if self.browser is not None and self.browser.waiting:
                free = 0  # renders are queued: a new lease could wait for a renderer past its lease's end
            if free <= 0:
                self._slot_freed.clear()
                with contextlib.suppress(TimeoutError):  # wake now and then: a stop must not wait for a free slot
                    await asyncio.wait_for(self._slot_freed.wait(), _IDLE_MAX)
                continue
            if free < refill and time.monotonic() < refill_until:
                await asyncio.sleep(_REFILL_WAIT_S)
                continue
            if any(pause.is_set() for pause in self.args.pauses):
                # In-flight fetches go on; nothing new until the pause ends. Idle connections (but those of sleeping
                # host sessions, the most recent) are closed: over --max-memory their buffers are what can go.
                self.http.trim_idle(keep=self.sleeping)
                await asyncio.sleep(_IDLE_MAX)
                continue
            # Announced before the budget is taken: the node never sees an empty budget and nothing in flight
            # while leases it paid for are on their way (it would stop short of --max-pages).
            self.args.report(leases=len(self.tasks) + min(free, self.opts.lease_batch))
            want = self._take_budget(min(free, self.opts.lease_batch))
            if want == 0:
                self.args.report(leases=len(self.tasks))
                await asyncio.sleep(_IDLE_MAX)
                continue
            asked = time.monotonic()  # the lease's TTL runs from a moment after this one in Redis
            leases = await self.frontier.lease(self.args.owner, want)
            for lease in leases:
                self._deadlines[lease.token] = asked + self._lease_ttl_s
            refill_until = time.monotonic() + _REFILL_MAX_S
            self._give_back_budget(want - len(leases))
            if not leases:
                self.args.report(leases=len(self.tasks))
                # Nothing ready: wait until the frontier expects a host to be, but stay responsive to new work.
                await asyncio.sleep(min(max(self.frontier.next_lease_in(), _IDLE_WAIT), _IDLE_MAX))
                continue
            for lease in leases:
                task = asyncio.create_task(self._handle(lease))
                self.tasks.add(task)
                task.add_done_callback(self._done)
            self.args.report(leases=len(self.tasks))

    def _done(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        self._slot_freed.set()
        self.args.report(leases=len(self.tasks))
        if not task.cancelled() and task.exception() is not None:
            # A bug, not a fetch failure: the lease will expire and the URL will be tried again.
            log.error("fetch task failed", exc_info=task.exception())

    async def _release(
        self,
        lease: Lease,
        action: UrlAction,
        *,
        delay_ms: int = 0,
        failed: bool = False,
        retry_after_ms: int = 0,
        counters: dict[str, int] | None = None,
        hold: bool = False,
    ) -> Held | Stale | None:
        if delay_ms > 0:
            delay_ms = jittered(delay_ms, self.pol.delay_jitter) + _GAP_MARGIN_MS
        if self.gate is not None:
            await self.gate.free(lease.token, delay_ms)
        release = Release(
            token=lease.token,
            shard=lease.shard,
            host=lease.host,
            action=action,
            delay_ms=delay_ms,
            failed=failed,
            retry_after_ms=retry_after_ms + _GAP_MARGIN_MS if retry_after_ms > 0 else 0,  # the same margin
            counters=counters or {},
            hold=hold,
        )
        asked = time.monotonic()
        held = await self.releases.release(release)  # one pipeline for the releases of many tasks
        self._unreleased.discard(lease.token)
        self._gaps.pop(lease.token, None)
        self._deadlines.pop(lease.token, None)
        if isinstance(held, Held):
            self._unreleased.add(held.lease.token)
            self._deadlines[held.lease.token] = asked + held.wait_ms / 1000.0 + self._lease_ttl_s
        return held

    def _fenced(self, lease: Lease) -> str:
        """Why no request may start under ``lease`` now ("" if one may): Redis is away (the node is cut off, its
        leases may be taken back), or the lease could expire before the request ends (see fetch/fence.py)."""
        if self.frontier.outage is not None and self.frontier.outage.down:
            return "Redis is away"
        deadline = self._deadlines.get(lease.token)
        if deadline is not None and deadline - time.monotonic() < self._fence_s:
            return "its lease could expire before the request ends"
        return ""

    async def _fence(self, lease: Lease) -> bool:
        """True (and the URL given back) if no request may start under ``lease`` now."""
        why = self._fenced(lease)
        if why:
            log.info("%s: not fetching %s: %s; it goes back to its queue", self.args.owner, lease.url, why)
            await self._give_back(lease)
        return bool(why)

    async def _finish(
        self, lease: Lease, page: Page, outcome: HostOutcome | None = None, session: int = -1
    ) -> Held | None:
        """Release the host (URL stays leased) and hand the page to a parser, which completes the URL.

        With ``session`` >= 0 (pages already fetched in this host session) the host may be held for the next one."""
        delay_ms = outcome.delay_ms if outcome else 0
        failed = outcome.failed if outcome else False
        hold = session >= 0 and not failed and reusable(page) and self._may_hold(session, delay_ms)
        held = await self._release(
            lease,
            UrlAction.KEEP,
            delay_ms=delay_ms,
            failed=failed,
            retry_after_ms=outcome.retry_after_ms if outcome else 0,
            counters=release_counters(page),
            hold=hold,
        )
        self.args.report(fetched=1 if page.status else 0, ended=1)
        if isinstance(held, Stale):  # taken back while we were cut off from Redis: someone else fetches it now
            log.info("%s: %s was taken back while Redis was away; its page is dropped", self.args.owner, lease.url)
            return None
        await self.sender.send(page)
        return held

    def _may_hold(self, session: int, delay_ms: int) -> bool:
        """Whether to ask for the host's next URL now (its page is taken from the node's budget at its turn)."""
        # only for a host whose next turn comes a second before our idle connection to it would be closed
        if session + 1 >= self.opts.session_pages or delay_ms > (self.http.keepalive_s - 1.0) * 1000:
            return False
        # each sleeping session keeps an idle connection: no more of them than the client keeps open
        sessions = min(SESSIONS_PER_SLOT * self.opts.concurrency, self.http.max_idle)
        if self.sleeping >= sessions or self.args.stop.is_set():
            return False
        if any(pause.is_set() for pause in self.args.pauses):
            return False
        return self.args.budget is None or self.args.budget.value > 0

    async def _session_wait(self, held: Held) -> Lease | None:
        """Sleep until the held host's turn; None (and the URL back at the head of its queue) if stopping."""
        self.sleeping += 1
        self._slot_freed.set()
        turn = time.monotonic() + held.wait_ms / 1000.0
        try:
            with contextlib.suppress(TimeoutError), self.http.keeping_idle(held.lease.url):  # a stop ends it early
                await asyncio.wait_for(self._stopping.wait(), held.wait_ms / 1000.0)
        finally:
            self.sleeping -= 1
        # The page is taken from --max-pages' budget only now: a sleeping session must not make the node stop
        # short of its limit by holding budget it then gives back.
        if self._stopping.is_set() or self.args.stop.is_set() or self._take_budget(1) == 0:
            # the host is free again once the rest of its gap has passed
            rest_ms = max(0, round((turn - time.monotonic()) * 1000))
            await self._release(held.lease, UrlAction.HEAD, delay_ms=rest_ms)
            return None
        return held.lease

    async def _retry(self, lease: Lease, outcome: HostOutcome) -> bool:
        """Put a transiently failed URL back in its queue unless its retries are used up."""
        if not outcome.retry or lease.retries >= self.pol.max_retries:
            return False
        self._give_back_budget(1)
        await self._release(
            lease,
            UrlAction.RETRY,
            delay_ms=outcome.delay_ms,
            failed=outcome.failed,
            retry_after_ms=outcome.retry_after_ms,
            counters={"retries": 1},
        )
        return True

    async def _handle(self, lease: Lease) -> None:
        """One leased URL, then the next ones of the same host while the frontier holds it for us."""
        session = 0
        next_lease: Lease | None = lease
        self._unreleased.add(lease.token)
        try:
            while next_lease is not None:
                held = await self._handle_one(next_lease, session)
                if held is None:
                    return
                session += 1
                next_lease = await self._session_wait(held)
        except asyncio.CancelledError:
            # Abandoned by a stop (its request is aborted by now): no record, not a failure, the URL is not lost.
            if next_lease is not None and next_lease.token in self._unreleased:
                await self._give_back(next_lease)
            raise
        except RedisUnavailable:
            # stopping while Redis is away: the lease stays and is taken back when the node starts again
            log.info("%s: Redis is away; %s is taken back on the next start", self.args.owner, lease.url)
        except Exception:
            # A bug, not a fetch failure: log it and give the URL back rather than leave the host leased until
            # --lease-ttl. Nothing may have been written for it; if a request was made, the gap below covers it.
            log.exception("fetch task failed")
            if next_lease is not None and next_lease.token in self._unreleased:
                await self._give_back(next_lease)

    async def _give_back(self, lease: Lease) -> None:
        """Put an unfinished URL back at the head of its queue, its host free after its politeness gap from now
        (a request may just have been cut). If Redis refuses too, the lease expires and is taken back."""
        gap_ms = self._gaps.get(lease.token, round(self.pol.delay * 1000))
        for attempt in range(3):
            try:
                await self._release(lease, UrlAction.HEAD, delay_ms=gap_ms)
            except RedisUnavailable:
                return  # stopping while Redis is away: taken back on the next start
            except Exception as exc:
                log.warning("could not give back %s (%s); retrying", lease.url, exc)
                await asyncio.sleep(0.5 * 2**attempt)
                continue
            self._give_back_budget(1)
            return

    async def _handle_one(self, lease: Lease, session: int) -> Held | None:
        origin = _origin(lease.url)
        if self.gate is not None:
            wait_ms = await self.gate.take(lease)
            if wait_ms:  # another host name on this address has a request in flight or its gap is running
                self._give_back_budget(1)
                await self._release(lease, UrlAction.HEAD, delay_ms=wait_ms, counters={"address-waits": 1})
                return None
        try:
            rules = await self.robots.cached(origin)
            if rules is None:
                return await self._fetch_robots(lease, origin, session)
        except PolicyError as exc:
            await self._finish(lease, Page(lease=lease, error=exc.reason, error_detail=str(exc)))
            return None
        if rules.unavailable:
            await self._robots_unavailable(lease, rules)
        elif not rules.allowed(lease.url):
            page = Page(lease=lease, error="robots", error_detail="disallowed by robots.txt")
            return await self._finish(lease, page, session=session)  # no request: the host's gap did not change
        else:
            return await self._fetch_page(lease, rules, session)
        return None

    async def _fetch_robots(self, lease: Lease, origin: str, session: int) -> Held | None:
        """robots.txt first: that request counts for politeness, so the page waits for the host's next turn (held
        for us, so it goes over the same connection)."""
        if await self._fence(lease):
            return None
        rules = await self.robots.fetch(origin)
        self._give_back_budget(1)
        delay_ms = host_gap_ms(self.pol, rules)
        hold = not rules.unavailable and self._may_hold(session, delay_ms)
        held = await self._release(lease, UrlAction.HEAD, delay_ms=delay_ms, counters={"robots-fetched": 1}, hold=hold)
        return held if isinstance(held, Held) else None

    async def _robots_unavailable(self, lease: Lease, rules: RobotsRules) -> None:
        """RFC 9309: an unreachable robots.txt means complete disallow for now. The URL waits (without using up
        its retries) until robots.txt is tried again; after ``robots_give_up`` failures in a row it is dropped."""
        if rules.failures < self.pol.robots_give_up:
            self._give_back_budget(1)
            wait_ms = int(max(0.0, rules.expires_at - time.time()) * 1000)
            await self._release(lease, UrlAction.HEAD, delay_ms=max(wait_ms, host_gap_ms(self.pol, rules)))
            return
        detail = f"robots.txt unreachable {rules.failures} times in a row ({rules.error})"
        # A name that does not resolve or a host whose TLS fails is reported as such, not as a robots problem.
        reason = rules.error if rules.error in ("dns", "tls") else "robots-unavailable"
        await self._finish(lease, Page(lease=lease, error=reason, error_detail=detail))

    async def _fetch_page(self, lease: Lease, rules: RobotsRules, session: int) -> Held | None:
        self._gaps[lease.token] = host_gap_ms(self.pol, rules)
        recrawl = (
            await self.frontier.recrawl_state(lease.shard, lease.url) if self.args.discovery.recrawl_after > 0 else ""
        )
        if await self._fence(lease):
            return None
        try:
            resp = await self._fetch_with(lease, rules, conditional_headers(recrawl) if recrawl else {})
        except FetcherBusy as exc:
            log.info("%s: %s; %s goes back to its queue", self.args.owner, exc, lease.url)
            await self._give_back(lease)
            return None
        except TransportError as exc:
            outcome = outcome_for(None, exc.reason, [], self.pol, rules.crawl_delay)
            if not await self._retry(lease, outcome):
                await self._finish(lease, Page(lease=lease, error=exc.reason, error_detail=str(exc)), outcome)
            return None
        except PolicyError as exc:
            await self._finish(lease, Page(lease=lease, error=exc.reason, error_detail=str(exc)))
            return None
        outcome = outcome_for(resp.status, None, resp.headers, self.pol, rules.crawl_delay, elapsed_ms=resp.elapsed_ms)
        if await self._retry(lease, outcome):
            return None
        page = page_from(lease, resp)
        page.recrawl = recrawl
        return await self._finish(lease, page, outcome, session)

    async def _fetch_with(self, lease: Lease, rules: RobotsRules, headers: dict[str, str]) -> Response:
        """The page over HTTP or in the browser (see fetch/route.py); a render and its HTTP try are one visit.

        ``headers``: a recrawl's conditional GET (HTTP only: a render always loads the whole page)."""
        reason = self.route.before(lease)
        if reason and self.browser is not None:
            return await self.browser.fetch(FetchRequest(lease.url, reason), rules)
        resp = await self.plain.fetch(FetchRequest(lease.url, headers=headers), rules)
        shell = self.route.after(lease.url, resp) if self.browser is not None else ""
        if shell and self.browser is not None:
            if self.route.remember(lease.host):
                await self.frontier.mark_render(lease.host)
            resp = await self.browser.fetch(FetchRequest(lease.url, shell, prior=resp), rules)
        return resp
