"""One leased URL in a fetcher: address gate -> robots.txt -> fetch -> release the host -> hand the page on.

The order of the two frontier writes matters: the host is released (its next-allowed time set from the end of
*this* request) before the page is sent on, so the parser's ``complete`` always finds the lease in its KEEP state.

Host sessions: a broad crawl comes back to a host long after its idle connection was closed, so most fetches paid a
new TCP + TLS handshake (the largest item of a fetcher's profile). A release may ask to *hold* the host: the frontier
then leases the host's next URL to this fetcher at once, due at the host's next-allowed time, and the task sleeps
until then and fetches it over the connection it still has open, up to ``session_pages`` pages in a row. Sleeping
sessions do not count against ``concurrency`` (they send nothing); politeness is the frontier's as before.

Everything it talks to comes in through :class:`~webtrawl.fetch.visitdeps.VisitDeps`: unit-tested with fakes.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import Sequence
from urllib.parse import urlsplit

from webtrawl.domains import domain_names, in_domains
from webtrawl.errors import PolicyError, RedisUnavailable, ScopeError, TransportError, TurnTimeout
from webtrawl.fetch.args import SESSIONS_PER_SLOT, FetcherArgs
from webtrawl.fetch.base import FetcherBusy, FetchRequest
from webtrawl.fetch.giveup import give_up_queue, host_down, robots_given_up
from webtrawl.fetch.pages import host_gap_ms, page_from, release_counters, reusable
from webtrawl.fetch.response import Response
from webtrawl.fetch.visitdeps import VisitDeps
from webtrawl.fetch.wake import WakeEvent
from webtrawl.formats.recrawl import conditional_headers
from webtrawl.frontier import Held, Parked, Release, Stale, UrlAction
from webtrawl.frontier.base import ReleaseAnswer as Answer
from webtrawl.messages import Lease, Page
from webtrawl.pagesend import FETCH_BUG
from webtrawl.politeness import HostOutcome, RobotsRules, jittered, outcome_for
from webtrawl.redact import redact

log = logging.getLogger("webtrawl.fetch")
_MAX_BUGS_LOGGED = 100  # distinct fetch bugs whose traceback is logged; the records hold every one

# A server sees our request end a little after we do (its last write returns after our last read): keeping the gap
# a few milliseconds longer than configured makes it hold from the server's side too.
GAP_MARGIN_MS = 10
_SIGNALS_S = 0.05  # how stale a hold decision's view of the node's stop and pause signals may be


class Visits:
    """The per-lease work of one fetcher process: the lease loop (fetch/worker.py) starts a :meth:`handle` a lease."""

    def __init__(self, args: FetcherArgs, deps: VisitDeps) -> None:
        self.args = args
        self.opts = args.fetch
        self.pol = args.politeness
        self.deps = deps
        self.sleeping = 0  # tasks waiting for their held host's next turn
        self.stopping = WakeEvent()  # set when leasing stops: host sessions stop waiting for their turn
        self.slot_freed = WakeEvent()  # a task ended or went to sleep: the lease loop may lease again
        self._unreleased: set[str] = set()  # tokens of leases this process holds and has not released yet
        self._gaps: dict[str, int] = {}  # token -> the host's politeness gap (ms), once its robots.txt is known
        self._signals_at, self._signalled = 0.0, False  # see _stop_or_pause
        self._domains = domain_names(args.allowed_domains)
        self._bugs_logged: set[tuple[str, str]] = set()  # (type, place) of the fetch bugs whose traceback was logged

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
        robots_wait: bool = False,
    ) -> Answer:
        if delay_ms > 0:
            delay_ms = jittered(delay_ms, self.pol.delay_jitter) + GAP_MARGIN_MS
        if self.deps.gate is not None:
            await self.deps.gate.free(lease.token, delay_ms)
        release = Release(
            token=lease.token,
            shard=lease.shard,
            host=lease.host,
            action=action,
            delay_ms=delay_ms,
            failed=failed,
            retry_after_ms=retry_after_ms + GAP_MARGIN_MS if retry_after_ms > 0 else 0,  # the same margin
            counters=counters or {},
            hold=hold,
            robots_wait=robots_wait,
        )
        asked = time.monotonic()
        held = await self.deps.releases.release(release)  # one pipeline for the releases of many tasks
        self._unreleased.discard(lease.token)
        self._gaps.pop(lease.token, None)
        self.deps.fence.released(lease.token)
        if isinstance(held, Held):
            self._unreleased.add(held.lease.token)
            self.deps.fence.leased([held.lease.token], asked, held.wait_ms / 1000.0)
        return held

    async def _fenced(self, lease: Lease) -> bool:
        """True (and the URL given back) if no request may start under ``lease`` now (see fetch/fence.py)."""
        why = self.deps.fence.why_not(lease.token)
        if why:
            log.info("%s: not fetching %s: %s; it goes back to its queue", self.args.owner, lease.url, why)
            await self._give_back(lease)
        return bool(why)

    async def _finish(
        self,
        lease: Lease,
        page: Page,
        outcome: HostOutcome | None = None,
        session: int = -1,
        body_parts: Sequence[bytes] = (),
    ) -> Held | None:
        """Release the host (URL stays leased) and hand the page to a parser, which completes the URL. With
        ``session`` >= 0 (pages already fetched in this host session) the host may be held for the next one.
        ``body_parts``: the page's body as the client left it (Response.body_parts)."""
        delay_ms = outcome.delay_ms if outcome else 0
        failed = outcome.failed if outcome else False
        hold = session >= 0 and not failed and reusable(page) and self._may_hold(session, delay_ms)
        asked = time.monotonic()
        held = await self._release(
            lease,
            UrlAction.KEEP,
            delay_ms=delay_ms,
            failed=failed,
            retry_after_ms=outcome.retry_after_ms if outcome else 0,
            counters=release_counters(page),
            hold=hold,
        )
        page.retried_out = outcome is not None and outcome.retry  # else it would have been retried
        return await self._hand_on(page, held, asked, body_parts)

    async def _hand_on(self, page: Page, held: Answer, asked: float, parts: Sequence[bytes]) -> Held | None:
        """The page of a URL released as KEEP (``asked``: when its release was sent) to a parser; if its failure
        parked the host, it ends as one whose retries ran out and the host's queued URLs are given up (giveup.py)."""
        self.args.report(fetched=1 if page.status else 0, ended=1)
        if isinstance(held, Stale):  # taken back while we were cut off from Redis: someone else fetches it now
            log.info("%s: %s was taken back while Redis was away; its page is dropped", self.args.owner, page.lease.url)
            return None
        if page.error and not page.recrawl and self.args.discovery.recrawl_after > 0:
            # no answer (a timeout, a reset, robots.txt out of reach): it keeps the state it had in the recrawl set
            page.recrawl = await self.deps.frontier.recrawl_state(page.lease.shard, page.lease.url)
        page.keep_until = asked + self.args.frontier.process_ttl_ms / 1000  # the parsers' deadline (parse/fence.py)
        page.robots = self.deps.robots.take_fetched()  # to the WARC with this page, whatever its host
        await self.deps.sender.send(page, parts)
        if isinstance(held, Parked):
            await give_up_queue(self.args, self.deps.frontier, self.deps.sender, page.lease, host_down(page, held))
        return held if isinstance(held, Held) else None

    def _may_hold(self, session: int, delay_ms: int) -> bool:
        """Whether to ask for the host's next URL now (its page is taken from the node's budget at its turn)."""
        conns = self.deps.connections
        # only for a host whose next turn comes a second before our idle connection to it would be closed
        if session + 1 >= self.opts.session_pages or delay_ms > (conns.keepalive_s - 1.0) * 1000:
            return False
        # each sleeping session keeps an idle connection: no more of them than the client keeps open
        sessions = min(SESSIONS_PER_SLOT * self.opts.concurrency, conns.max_idle)
        if self.sleeping >= sessions or self._stop_or_pause():
            return False
        return self.args.budget is None or self.args.budget.value > 0

    def _stop_or_pause(self) -> bool:
        """Whether the node asks this fetcher to stop or to pause, read at most every ``_SIGNALS_S``: a read of a
        multiprocessing Event takes its lock (a few semaphore calls), and every page's hold decision asks. A
        session held a moment too long still ends at its turn (``_session_wait`` reads the stop itself)."""
        now = time.monotonic()
        if now >= self._signals_at:
            self._signals_at = now + _SIGNALS_S
            self._signalled = self.args.stop.is_set() or any(pause.is_set() for pause in self.args.pauses)
        return self._signalled

    async def _session_wait(self, held: Held) -> Lease | None:
        """Sleep until the held host's turn; None (and the URL back at the head of its queue) if stopping."""
        self.sleeping += 1
        self.slot_freed.set()
        turn = time.monotonic() + held.wait_ms / 1000.0
        try:
            with self.deps.connections.keeping_idle(held.lease.url):
                await self.stopping.wait_at_most(held.wait_ms / 1000.0)  # a stop ends it
        finally:
            self.sleeping -= 1
        # The page is taken from --max-pages' budget only now: a sleeping session must not make the node stop
        # short of its limit by holding budget it then gives back.
        if self.stopping.is_set() or self.args.stop.is_set() or self.args.take_budget(1) == 0:
            # the host is free again once the rest of its gap has passed
            rest_ms = max(0, round((turn - time.monotonic()) * 1000))
            await self._release(held.lease, UrlAction.HEAD, delay_ms=rest_ms)
            return None
        return held.lease

    async def _retry(self, lease: Lease, outcome: HostOutcome, page: Page, body_parts: Sequence[bytes] = ()) -> bool:
        """Put a transiently failed URL back in its queue unless its retries are used up, or its failure parks the
        host: then the frontier kept it for the parsers, and ``page`` goes to them as a URL whose retries ran out."""
        limit = self.pol.max_retries if outcome.max_retries < 0 else min(outcome.max_retries, self.pol.max_retries)
        if not outcome.retry or lease.retries >= limit:
            return False
        asked = time.monotonic()
        held = await self._release(
            lease,
            UrlAction.RETRY,
            delay_ms=outcome.delay_ms,
            failed=outcome.failed,
            retry_after_ms=outcome.retry_after_ms,
            counters={"retries": 1},
        )
        if isinstance(held, Parked):  # release.lua kept it for the parsers: its retries end here
            page.retried_out = True
            await self.deps.frontier.count(release_counters(page) or {})  # what its KEEP release would have counted
            await self._hand_on(page, held, asked, body_parts)
        else:
            self.args.give_back_budget(1)  # fetched again later; after the release: a failed one's caller gives it back
        return True

    async def _retry_or_end(self, lease: Lease, reason: str, detail: str) -> None:
        """A URL not fetched for a reason of this fetcher's own (no free renderer, a big body's turn that never
        came, a bug in its task): no host failure, no back-off. It goes to the tail of its queue using one of its
        retries, so one that can never be fetched (hosts that stall for ever ahead of it, a bug it meets every
        time) ends as a recorded ``reason`` once they are used up, as Scrapy's and Heritrix's retry limits end it,
        rather than go round its queue for ever and keep the crawl from ending."""
        gap_ms = self._gaps.get(lease.token, round(self.pol.delay * 1000))  # a request may have been made
        if lease.retries < self.pol.max_retries:
            log.info("%s: %s; %s goes back to its queue", self.args.owner, detail, lease.url)
            await self._release(lease, UrlAction.RETRY, delay_ms=gap_ms, counters={"retries": 1})
            self.args.give_back_budget(1)  # after the release: if it fails, the caller's give-back returns the budget
            return
        detail = f"{detail} (tried {lease.retries + 1} times)"
        await self._finish(lease, Page(lease=lease, error=reason, error_detail=detail), HostOutcome(gap_ms, retry=True))

    async def handle(self, lease: Lease) -> None:
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
        except Exception as exc:
            # A bug, not a fetch failure: log it and give the URL back rather than leave the host leased until
            # --lease-ttl. Nothing may have been written for it; if a request was made, the gap below covers it.
            self._log_bug((next_lease or lease).url, exc)
            if next_lease is not None and next_lease.token in self._unreleased:
                await self._after_bug(next_lease, exc)

    def _log_bug(self, url: str, exc: Exception) -> None:
        """The traceback once per distinct error (type and place), as extraction logs a callback's: a user's
        fetcher that fails on every URL would otherwise log one per URL and try. The record says the rest."""
        frames = traceback.extract_tb(exc.__traceback__)
        key = (type(exc).__name__, f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "")
        if key not in self._bugs_logged and len(self._bugs_logged) < _MAX_BUGS_LOGGED:
            self._bugs_logged.add(key)
            log.error("fetch task failed on %s (logged once per distinct error)", redact(url), exc_info=exc)

    async def _after_bug(self, lease: Lease, exc: Exception) -> None:
        """A URL whose fetch task failed with a bug: :meth:`_retry_or_end` as ``fetch-bug``."""
        try:
            await self._retry_or_end(lease, FETCH_BUG, f"{type(exc).__name__}: {exc}")
        except Exception:
            log.exception("could not end %s after a bug; it goes back to its queue", lease.url)
            if lease.token in self._unreleased:
                await self._give_back(lease)

    async def _give_back(self, lease: Lease) -> None:
        """Put an unfinished URL back at the head of its queue, its host free after its politeness gap from now
        (a request may just have been cut). If Redis refuses too, the lease expires and is taken back."""
        gap_ms = self._gaps.get(lease.token, round(self.pol.delay * 1000))
        for attempt in range(3):
            try:
                await self._release(lease, UrlAction.HEAD, delay_ms=gap_ms)
                self.args.give_back_budget(1)
                return
            except RedisUnavailable:
                return  # stopping while Redis is away: taken back on the next start
            except Exception as exc:
                stopping = self.stopping.is_set() or self.args.stop.is_set()  # retries would outlast its grace
                then = "taken back on the next start" if stopping else "retrying"
                log.warning("could not give back %s (%s); %s", redact(lease.url), exc, then)
                if stopping:
                    return
                await asyncio.sleep(0.5 * 2**attempt)

    async def _handle_one(self, lease: Lease, session: int) -> Held | None:
        parts = urlsplit(lease.url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if self._domains and lease.depth == 0 and not in_domains(parts.hostname or "", self._domains):
            detail = "a seed outside the spider's allowed_domains"  # links were kept to them by the parsers
            await self._finish(lease, Page(lease=lease, error=ScopeError.reason, error_detail=detail))
            return None
        if self.deps.gate is not None:
            wait_ms = await self.deps.gate.take(lease)
            if wait_ms:  # another host name on this address has a request in flight or its gap is running
                self.args.give_back_budget(1)
                await self._release(lease, UrlAction.HEAD, delay_ms=wait_ms, counters={"address-waits": 1})
                return None
        try:
            rules = await self.deps.robots.cached(origin)
            if rules is None:
                return await self._fetch_robots(lease, origin, session)
        except PolicyError as exc:
            await self._finish(lease, Page(lease=lease, error=exc.reason, error_detail=str(exc)))
            return None
        if rules.unavailable:
            await self._robots_unavailable(lease, rules, origin)
        elif not rules.allowed(lease.url):
            page = Page(lease=lease, error="robots", error_detail="disallowed by robots.txt")
            return await self._finish(lease, page, session=session)  # no request: the host's gap did not change
        else:
            return await self._fetch_page(lease, rules, session)
        return None

    async def _fetch_robots(self, lease: Lease, origin: str, session: int) -> Held | None:
        """robots.txt first: that request counts for politeness, so the page waits for the host's next turn (held
        for us, so it goes over the same connection)."""
        if await self._fenced(lease):
            return None
        rules = await self.deps.robots.fetch(origin)
        self.args.give_back_budget(1)
        delay_ms = host_gap_ms(self.pol, rules)
        hold = not rules.unavailable and self._may_hold(session, delay_ms)
        held = await self._release(lease, UrlAction.HEAD, delay_ms=delay_ms, counters={"robots-fetched": 1}, hold=hold)
        return held if isinstance(held, Held) else None

    async def _robots_unavailable(self, lease: Lease, rules: RobotsRules, origin: str) -> None:
        """RFC 9309: an unreachable robots.txt means complete disallow for now. The URL waits (without using up
        its retries) until robots.txt is tried again; after ``robots_give_up`` failures in a row it ends, kept for
        ``trawl requeue``, and so do the origin's other queued URLs, at once (giveup.py)."""
        if rules.failures < self.pol.robots_give_up:
            self.args.give_back_budget(1)
            wait_ms = int(max(0.0, rules.expires_at - time.time()) * 1000)
            delay_ms = max(wait_ms, host_gap_ms(self.pol, rules))
            await self._release(lease, UrlAction.HEAD, delay_ms=delay_ms, robots_wait=True)
            return
        why = robots_given_up(rules)
        # the queue first, while this lease keeps the host: none of its URLs meets robots.txt alone meanwhile
        await give_up_queue(self.args, self.deps.frontier, self.deps.sender, lease, why, origin)
        # no request, no host failure: ended as a URL whose retries ran out (retry=True), kept for trawl requeue
        await self._finish(lease, Page(lease=lease, error=why[0], error_detail=why[1]), HostOutcome(0, retry=True))

    async def _fetch_page(self, lease: Lease, rules: RobotsRules, session: int) -> Held | None:
        self._gaps[lease.token] = host_gap_ms(self.pol, rules)
        frontier = self.deps.frontier
        recrawl = await frontier.recrawl_state(lease.shard, lease.url) if self.args.discovery.recrawl_after > 0 else ""
        if await self._fenced(lease):
            return None
        try:
            resp = await self._fetch_with(lease, rules, conditional_headers(recrawl) if recrawl else {})
        except (FetcherBusy, TurnTimeout) as exc:  # this fetcher's load, not the host's fault: not a failure
            await self._retry_or_end(lease, exc.reason, str(exc))
            return None
        except TransportError as exc:
            outcome = outcome_for(None, exc.reason, [], self.pol, rules.crawl_delay)
            failed = Page(lease=lease, error=exc.reason, error_detail=str(exc))
            if not await self._retry(lease, outcome, failed):
                await self._finish(lease, failed, outcome)
            return None
        except PolicyError as exc:
            await self._finish(lease, Page(lease=lease, error=exc.reason, error_detail=str(exc)))
            return None
        outcome = outcome_for(resp.status, None, resp.headers, self.pol, rules.crawl_delay, elapsed_ms=resp.elapsed_ms)
        page = page_from(lease, resp)
        page.recrawl = recrawl
        if await self._retry(lease, outcome, page, resp.body_parts):
            return None
        return await self._finish(lease, page, outcome, session, resp.body_parts)

    async def _fetch_with(self, lease: Lease, rules: RobotsRules, headers: dict[str, str]) -> Response:
        """The page from the fetcher whose role the route chooses (see fetch/route.py): ``plain`` first, ``render``
        for what needs a browser; a render and its plain try are one visit.

        ``headers``: a recrawl's conditional GET (plain only: a render always loads the whole page)."""
        route, render = self.deps.route, self.deps.fetchers.render
        reason = route.before(lease)
        if reason and render is not None:
            return await render.fetch(FetchRequest(lease.url, reason), rules)
        resp = await self.deps.fetchers.plain.fetch(FetchRequest(lease.url, headers=headers), rules)
        shell = route.after(lease.url, resp) if render is not None else ""
        if shell and render is not None:
            if route.remember(lease.host):
                await self.deps.frontier.mark_render(lease.host)
            resp = await render.fetch(FetchRequest(lease.url, shell, prior=resp), rules)
        return resp
