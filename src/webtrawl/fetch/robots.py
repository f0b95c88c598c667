"""robots.txt per origin (RFC 9309): fetch, interpret the status, cache locally and in the frontier store.

Decisions follow RFC 9309 section 2.3.1: a 2xx body is parsed (the first ``max_robots`` bytes of it, as it came
when it is not in the ``Content-Encoding`` it is labelled with); a 4xx, a redirect loop or more than five redirects
mean "no rules"; a 5xx (or a status past 599), 429, timeout, network
error or an answer that is not HTTP/1.x (``bad-http``: Google reads "invalid responses" and chunking errors as
server errors) mean "complete disallow for now". That unavailable state is kept only briefly so it is retried
with growing gaps; after a few unavailable results in a row it is kept for the normal robots TTL. A DNS or TLS
failure gives up at once: those are not transient, and the host's URLs are then recorded with that reason.
Matching is ``webtrawl.politeness.RobotsRules``; the local LRU is bounded by the estimated memory of each origin's
rules (body and compiled matcher, see ``RobotsRules.size``), and origins with identical bodies share one compiled
matcher.

A redirect to another host's file is shared (:meth:`RobotsCache._shared`): one download per process, the rules in the
store for every process, so many origins sending there do not all ask that host at once.

Every answer a robots.txt fetch gets (each redirect hop, any status) is kept as an :class:`Exchange` until the
fetcher hands on its next page, which carries them to the WARC (``Page.robots``): an archive holds the robots.txt
the crawl obeyed, as Heritrix's do. At most ``_KEPT_BYTES`` of them wait; past that the oldest are not archived.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Protocol
from urllib.parse import urlsplit

from webtrawl.config import FetchOptions, Limits, Politeness
from webtrawl.decompress import content_codings, decompress
from webtrawl.errors import BadContent, DecompressionBomb, HttpError, PolicyError, TransportError
from webtrawl.fetch.response import Response
from webtrawl.formats.canonical import canonicalize
from webtrawl.messages import Exchange
from webtrawl.politeness.backoff import HOST_BROKEN_REASONS, outcome_for
from webtrawl.politeness.robots import RobotsRules
from webtrawl.politeness.robotstxt import whole_lines

_MAX_HOPS = 5
_GAP_MARGIN_S = 0.01  # as in the fetcher: the server's view of our request's end lags ours a little
_KEPT_BYTES = 16 << 20  # robots.txt answers waiting for a page to carry them to the WARC


def robots_origin(url: str) -> str | None:
    """The origin whose robots.txt ``url`` is (``<origin>/robots.txt``, canonical form), else None."""
    try:
        parts = urlsplit(canonicalize(url))
    except PolicyError:  # not http(s), not a URL
        return None
    if parts.path != "/robots.txt" or parts.query:
        return None
    return f"{parts.scheme}://{parts.netloc}"


class RobotsStore(Protocol):
    """Where robots.txt results are shared between processes (the async frontier)."""

    async def get_robots(self, origin: str) -> bytes | None: ...

    async def set_robots(self, origin: str, value: bytes, ttl_s: float) -> None: ...


class RobotsClient(Protocol):
    """What fetches robots.txt: the process's ``HttpClient`` (a fake in tests, :mod:`webtrawl.fetch.testing`)."""

    async def fetch(
        self,
        url: str,
        *,
        max_body: int | None = None,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response: ...


class RobotsCache:
    """Process-local LRU in front of the shared store, and the robots.txt fetch itself."""

    def __init__(
        self,
        store: RobotsStore,
        client: RobotsClient,
        fetch: FetchOptions,
        politeness: Politeness,
        limits: Limits,
        *,
        max_entries: int = 20_000,
        max_bytes: int = Limits().robots_cache,
        retry_base_s: float = 60.0,
        unavailable_limit: int = 5,
        clock: Callable[[], float] = time.time,
        sitemaps_found: Callable[[str, list[str]], Awaitable[None]] | None = None,
        politeness_key: str = "host",
    ) -> None:
        self._store = store
        self._client = client
        self._pol, self._limits = politeness, limits
        self._robots_timeout = fetch.timeouts.robots
        self._token = fetch.product_token
        self._lru: OrderedDict[str, RobotsRules] = OrderedDict()
        self._lru_bytes = 0
        self._max_entries, self._max_bytes = max_entries, max_bytes
        self._retry_base_s = retry_base_s
        self._unavailable_limit = unavailable_limit
        self._clock = clock
        self._sitemaps_found = sitemaps_found
        self._politeness_key = politeness_key  # the crawl's: what one lease and one gap cover (host, domain, ip)
        self._inflight: dict[str, asyncio.Task[RobotsRules]] = {}
        self._hops: dict[str, asyncio.Task[tuple[bytes, float]]] = {}  # robots.txt URLs of other hosts (_shared)
        self._absent: set[str] = set()  # origins cached() just found nowhere: fetch() need not ask the store again
        self._fetched: list[Exchange] = []  # answers not yet handed on with a page (see take_fetched)
        self._fetched_bytes = 0

    def take_fetched(self) -> list[Exchange]:
        """The robots.txt answers downloaded since the last call, oldest first, for the WARC (``Page.robots``)."""
        taken, self._fetched, self._fetched_bytes = self._fetched, [], 0
        return taken

    def _keep(self, url: str, resp: Response) -> None:
        self._fetched.append(Exchange(url=url, **resp.wire()))
        self._fetched_bytes += len(resp.body)
        while self._fetched_bytes > _KEPT_BYTES and len(self._fetched) > 1:
            self._fetched_bytes -= len(self._fetched.pop(0).body)

    async def cached(self, origin: str) -> RobotsRules | None:
        """Fresh rules of ``origin`` from this process or the store, or None if they must be fetched."""
        now = self._clock()
        rules = self._lru.get(origin)
        # an unavailable one is looked for in the store again: trawl requeue may have forgotten it, to have it asked
        # again (node/requeue.py); its URLs come once per retry, or once per give-up (fetch/giveup.py): a rare read
        if (
            rules is not None
            and rules.fresh(now)
            and (not rules.unavailable or await self._store.get_robots(origin) is not None)
        ):
            self._lru.move_to_end(origin)
            return rules
        rules = await self._load(origin)
        if rules is None:
            self._drop(origin)  # forgotten by the store: its failures, if any, count anew
            if len(self._absent) > 10_000:
                self._absent.clear()
            self._absent.add(origin)
        return rules if rules is not None and rules.fresh(now) else None

    async def fetch(self, origin: str) -> RobotsRules:
        """GET ``<origin>/robots.txt`` now and store the result. Raises PolicyError if the origin itself is
        refused (address, port, scheme); every other failure becomes rules."""
        task = self._inflight.get(origin)
        if task is None:
            task = asyncio.ensure_future(self._fetch(origin))
            self._inflight[origin] = task
            task.add_done_callback(lambda _t: self._inflight.pop(origin, None))
        return await asyncio.shield(task)

    async def _fetch(self, origin: str) -> RobotsRules:
        if origin in self._absent:  # cached() found nothing a moment ago: one store round trip less per new host
            self._absent.discard(origin)
            previous = self._lru.get(origin)
        else:
            # only its failure count is read: not remembered (that would compile a matcher about to be replaced)
            previous = self._lru.get(origin) or await self._stored(origin)
        rules, retry_after_s = await self._download(origin)
        if self._sitemaps_found is not None and rules.sitemaps:
            # before the rules are stored: a crash in between fetches robots.txt again and adds the sitemaps again
            # (the seen filter drops the repeats), where the other order could lose them for the robots TTL
            await self._sitemaps_found(origin, rules.sitemaps)
        now = self._clock()
        ttl = self._pol.robots_ttl
        if rules.unavailable:
            rules.failures = previous.failures + 1 if previous is not None and previous.unavailable else 1
            if rules.error in HOST_BROKEN_REASONS:  # retrying robots.txt will not help
                rules.failures = max(rules.failures, self._unavailable_limit)
            if rules.failures < self._unavailable_limit:  # a server's Retry-After (capped) may ask for longer
                ttl = min(ttl, max(self._retry_base_s * 2 ** (rules.failures - 1), retry_after_s))
        rules.expires_at = min(rules.expires_at, now + ttl)  # rules another origin fetched expire with theirs
        # The store keeps every state for the full robots TTL so the count of unavailable results survives
        # between the short-lived unavailable states; freshness is decided by expires_at inside the value.
        await self._store.set_robots(origin, rules.encode(), self._pol.robots_ttl)
        self._remember(origin, rules)
        return rules

    async def _download(self, origin: str) -> tuple[RobotsRules, float]:
        """The rules robots.txt gives, and the seconds a 429 or 503 answer's Retry-After asks for (0: none)."""
        return await self._follow(origin.rstrip("/") + "/robots.txt", 0, share=True)

    async def _follow(self, url: str, hop: int, *, share: bool) -> tuple[RobotsRules, float]:
        """:meth:`_download` from ``url``, ``hop`` redirects in; with ``share``, the file another host holds is
        :meth:`_shared`."""
        while hop <= _MAX_HOPS:
            try:
                resp = await self._client.fetch(url, max_body=self._limits.max_robots, timeout=self._robots_timeout)
            except PolicyError as exc:
                if hop == 0:
                    raise  # the origin itself is refused: so is every page on it
                return self._rules(b"", status=0, error=f"redirect-{exc.reason}"), 0.0
            except TransportError as exc:
                return self._rules(b"", status=0, unavailable=True, error=exc.reason), 0.0
            self._keep(url, resp)
            target = resp.redirect_target(url)
            if target is None:
                # the Retry-After rules of a page's answer (statuses, cap), so robots.txt cannot be asked again sooner
                outcome = outcome_for(resp.status, None, resp.headers, self._pol, None, now=self._clock())
                return self._from_response(resp), outcome.retry_after_ms / 1000.0
            hop += 1
            known = await self._known(target)
            if known is not None:
                return known
            other_host = urlsplit(target).hostname != urlsplit(url).hostname
            if hop <= _MAX_HOPS and (not other_host or self._politeness_key != "host"):
                # Another request to the same host, or maybe to its domain or address (--politeness-key domain, ip):
                # it gets the same politeness gap as any other. The lease (and the address's gate) stays held
                # meanwhile, so nothing else is sent there.
                await asyncio.sleep(self._pol.delay + _GAP_MARGIN_S)
            if other_host and share:
                return await self._shared(target, hop)
            url = target
        return self._rules(b"", status=0, error="redirects"), 0.0

    async def _known(self, url: str) -> tuple[RobotsRules, float] | None:
        """When ``url`` is another origin's own robots.txt, the fresh state that origin's fetch stored, and the seconds
        it holds if unavailable: not asked again. Asking it would be a request outside that host's lease and gap (the
        origin's pages may be fetched right then), for a file already fetched (every subdomain's robots.txt sent to
        www's while www is crawled)."""
        origin = robots_origin(url)
        rules = await self._stored(origin) if origin is not None else None
        if rules is None:
            return None
        left = rules.expires_at - self._clock()
        if left <= 0 or rules.failures >= self._unavailable_limit:
            return None  # given up: each origin that redirects there counts its own tries (trawl requeue asks again)
        return rules, left if rules.unavailable else 0.0

    async def _shared(self, url: str, hop: int) -> tuple[RobotsRules, float]:
        """The rules of a robots.txt on another host than its origin's: many origins send theirs to one (every
        subdomain's to www's, http's to https', a CDN's customers'), and each of them fetched it, at once and without
        that host's gap (nor its lease): eight hosts redirecting to one sent it eight requests in the same
        millisecond. The origins of a process share one download of ``url``, and the crawl's share its rules in the
        store for --robots-ttl (unless unavailable: each origin then counts its own retries). What ``url`` redirects
        to is followed without sharing, so no download waits for another (two hosts redirecting to each other)."""
        stored = await self._stored(url)
        if stored is not None:
            return stored, 0.0
        task = self._hops.get(url)
        if task is None:
            task = asyncio.ensure_future(self._follow_once(url, hop))
            self._hops[url] = task
            task.add_done_callback(lambda _t: self._hops.pop(url, None))
        data, retry_after_s = await asyncio.shield(task)
        return RobotsRules.decode(data), retry_after_s  # each origin's own copy: its failures, its expiry

    async def _follow_once(self, url: str, hop: int) -> tuple[bytes, float]:
        rules, retry_after_s = await self._follow(url, hop, share=False)
        if not rules.unavailable:  # the origins that take these rules later keep them no longer than this
            rules.expires_at = self._clock() + self._pol.robots_ttl
        data = rules.encode()
        if not rules.unavailable:
            await self._store.set_robots(url, data, self._pol.robots_ttl)
            origin = robots_origin(url)
            if origin is not None:  # an origin's own file (http's sent to https'): its rules, not asked for again
                await self._store.set_robots(origin, data, self._pol.robots_ttl)
        return data, retry_after_s

    def _from_response(self, resp: Response) -> RobotsRules:
        status = resp.status
        if 200 <= status < 300:
            cap = self._limits.max_robots
            codings = content_codings(resp.header_values("content-encoding"))
            error = ""
            try:
                body = decompress(resp.body, codings, self._limits.max_decompressed)
            except DecompressionBomb as exc:
                return self._rules(b"", status=status, error=exc.reason)
            except BadContent as exc:
                # Not in the coding it is labelled with (a plain file sent as gzip): read as it came, so its rules
                # hold. Reading it as empty allowed every page; garbage read as it came holds no rules either.
                body, error = resp.body, exc.reason
            if resp.truncated or len(body) > cap:
                body = whole_lines(body[:cap])
            return self._rules(body, status=status, error=error)
        klass = HttpError(status).klass
        if status == 429 or status >= 500 or status < 200:
            return self._rules(b"", status=status, unavailable=True, error=klass)
        return self._rules(b"", status=status, error=klass)  # 4xx, odd 3xx: no rules

    def _rules(self, body: bytes, *, status: int, unavailable: bool = False, error: str = "") -> RobotsRules:
        return RobotsRules(
            body,
            token=self._token,
            status=status,
            unavailable=unavailable,
            error=error,
            max_bytes=self._limits.max_robots,
        )

    async def _load(self, origin: str) -> RobotsRules | None:
        rules = await self._stored(origin)
        if rules is not None:
            self._remember(origin, rules)
        return rules

    async def _stored(self, origin: str) -> RobotsRules | None:
        """The rules the shared store holds for ``origin`` (None if none or unreadable), for this crawl's token."""
        data = await self._store.get_robots(origin)
        if data is None:
            return None
        try:
            rules = RobotsRules.decode(data)
        except ValueError:
            return None
        if not rules.usable_for(self._token, self._limits.max_robots):
            return None  # another product token's rules (an earlier run's User-Agent) or size cap: fetched again
        rules.token = self._token  # the stored token may be of an earlier run with another User-Agent
        rules.max_bytes = self._limits.max_robots
        return rules

    def _remember(self, origin: str, rules: RobotsRules) -> None:
        rules.drop_body()  # compiled now: its next checks come soon, and the LRU then counts what it holds
        self._drop(origin)
        self._lru[origin] = rules
        self._lru_bytes += rules.size
        while self._lru and (len(self._lru) > self._max_entries or self._lru_bytes > self._max_bytes):
            _, evicted = self._lru.popitem(last=False)
            self._lru_bytes -= evicted.size

    def _drop(self, origin: str) -> None:
        old = self._lru.pop(origin, None)
        if old is not None:
            self._lru_bytes -= old.size
