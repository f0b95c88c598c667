"""One GET, exactly as the server sent it: the fetcher's HTTP client.

The crawler archives what it received, so the body stays content-encoded (decompression happens in the
parser, with its own caps), headers keep their order and spelling, and redirects are returned rather than
followed (each hop goes back through the frontier for politeness and dedup). Every failure leaves as one
:mod:`webtrawl.errors` class with a short message, so the caller never needs to know aiohttp's exception zoo
(:mod:`webtrawl.fetch.wire` holds the aiohttp-level parts; the answer is :mod:`webtrawl.fetch.response`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Self

import aiohttp
from aiohttp.abc import AbstractCookieJar
from yarl import URL

from webtrawl.config import FetchOptions, Limits
from webtrawl.errors import (
    BadHttp,
    BadUrl,
    ConnectError,
    ConnectionReset,
    FetchTimeout,
    NoLiveProxy,
    SchemeError,
    TurnTimeout,
    WebtrawlError,
)
from webtrawl.fetch import tolerant
from webtrawl.fetch.addrpolicy import AddressPolicy, parse_ip_literal
from webtrawl.fetch.capacity import ceiling
from webtrawl.fetch.connector import Connector
from webtrawl.fetch.cookies import CookieStore, CrawlJar, SharedCookies
from webtrawl.fetch.dns import Resolver
from webtrawl.fetch.proxies import ProxyPool, sent_to_target
from webtrawl.fetch.response import Response
from webtrawl.fetch.wire import (
    BIG_BODIES,
    SENT_TRANSPORTS,
    PeerResponse,
    ProxyDown,
    RawCookieJar,
    TrackedRequest,
    Turn,
    abort_transports,
    map_error,
    open_socket,
    read_body,
    ssl_context,
)
from webtrawl.values import parse_headers

__all__ = ["ACCEPT_ENCODING", "HttpClient", "Response"]

ACCEPT_ENCODING = "gzip, deflate, br, zstd"

_TRIM_EVERY_S = 0.25  # how often idle connections past their keep-alive or beyond the cap are closed
# How long an idle connection stays open. 5 s (two politeness delays) was measured: 400 MiB less per fetcher but
# 2.3x its CPU, because a host of a 3,000-6,000-host crawl often comes back within 15 s (benchmarks/RESULTS.md).
_KEEPALIVE_S = 15.0
# A status below 100 (``000``) is refused as curl and Python's http.client refuse it: a page recorded with status 0
# read as "no answer" everywhere (retried as a network error, not counted as fetched). One past 599 is an answer
# (browsers and curl take it; RFC 9110 15: read as a 5xx, see errors.HttpError).
_LOWEST_STATUS = 100
_Origin = tuple[str, int | None, bool]  # host, port, TLS: the part of aiohttp's ConnectionKey that names an origin


def _as_received(reason: str) -> str:
    """The reason phrase as the headers are given: its bytes as received, read as latin-1. aiohttp reads it as UTF-8
    with surrogate escapes, and a byte that is not UTF-8 (``200 Tr\\xe8s bien``) left a lone surrogate, which no
    encoder takes: the page could not be sent to a parser (and the WARC wrote other bytes for a UTF-8 one)."""
    return reason if reason.isascii() else reason.encode("utf-8", "surrogateescape").decode("latin-1")


def _origin_of(url: URL) -> _Origin:
    return url.raw_host or "", url.port, url.scheme == "https"


class HttpClient:
    """Owns one aiohttp session (connection pool, resolver, TLS context) for a fetcher process."""

    def __init__(
        self,
        fetch: FetchOptions,
        limits: Limits,
        *,
        resolver: Resolver | None = None,
        url_headers: Callable[[str], dict[str, str]] | None = None,
        cookie_store: CookieStore | None = None,
    ) -> None:
        self._fetch = fetch
        self._max_body = limits.max_body
        self._url_headers = url_headers  # more headers for some URLs (a rules file's headers: extract/hints.py)
        self.policy: AddressPolicy = resolver.policy if resolver else AddressPolicy(fetch.ip_allow, fetch.ports)
        self.resolver: Resolver = resolver or Resolver(fetch.resolve, self.policy, nameservers=fetch.nameservers)
        self._headers = {"User-Agent": fetch.user_agent, "Accept-Encoding": ACCEPT_ENCODING}
        self._headers.update(parse_headers(fetch.header))
        self.proxies = ProxyPool(fetch.proxy)
        self._ssl = ssl_context(fetch)
        self.keepalive_s = _KEEPALIVE_S
        self.max_idle = max(0, fetch.idle_connections)
        self._session: aiohttp.ClientSession | None = None
        self._connector: aiohttp.TCPConnector | None = None
        self._trimmer: asyncio.Task[None] | None = None
        self._big_bodies = asyncio.Semaphore(BIG_BODIES)
        self._kept: dict[_Origin, int] = {}  # origins of sleeping host sessions (a dict: Counter's del is Python)
        self.bytes_read = 0  # body bytes read so far: what the fetcher's heap trimmer counts (fetch/worker.py)
        self._cookie_store = cookie_store
        self.cookies: SharedCookies | None = None  # --cookies with a store: the crawl's jar (fetch/cookies.py)

    async def __aenter__(self) -> Self:
        connector = Connector(
            resolver=self.resolver,
            use_dns_cache=False,  # the resolver caches, and must see every connect for the policy
            ssl=self._ssl,
            limit=max(1, ceiling(self._fetch)) * 2,
            limit_per_host=0,  # the frontier already keeps one request per host in flight
            keepalive_timeout=self.keepalive_s + 1.0,  # a backstop: trim_idle() closes them first, and aborts
            socket_factory=open_socket,
        )
        # each connection's protocol keeps an answer followed by bytes past its end (fetch/tolerant.py)
        tolerant.install(connector)
        self._connector = connector
        self._trimmer = asyncio.create_task(self._trim_loop())
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=self._cookie_jar(),
            response_class=PeerResponse,
            request_class=TrackedRequest,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._fetch.timeouts.connect),
            max_line_size=16384,
            max_field_size=16384,
            max_headers=256,
        )
        return self

    def _cookie_jar(self) -> AbstractCookieJar:
        """--cookies: aiohttp's jar (domain rules), sent back as the server set them (RawCookieJar); with a store, the
        crawl's jar (fetch/cookies.py), else this process's for its life (``trawl try``)."""
        if not self._fetch.cookies:
            return aiohttp.DummyCookieJar()
        if self._cookie_store is None:
            return RawCookieJar()
        jar = CrawlJar()
        self.cookies = SharedCookies(jar, self._cookie_store)
        return jar

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._trimmer is not None:
            self._trimmer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._trimmer
            self._trimmer = None
        self.trim_idle(keep=0)
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self.resolver.close()

    async def _trim_loop(self) -> None:
        while True:
            await asyncio.sleep(_TRIM_EVERY_S)
            self.trim_idle()

    @contextlib.contextmanager
    def keeping_idle(self, url: str) -> Iterator[None]:
        """While a host session sleeps until its next turn, its idle connection to ``url``'s origin is closed by the
        cap only after all other idle connections: a broad crawl opens new ones all the time, and closing the
        oldest first took exactly the sessions' connections (a new TLS handshake for nearly every page)."""
        origin = _origin_of(URL(url, encoded=True))
        kept = self._kept
        kept[origin] = kept.get(origin, 0) + 1
        try:
            yield
        finally:
            if kept[origin] > 1:
                kept[origin] -= 1
            else:
                del kept[origin]

    def idle_count(self) -> int:
        conns = self._idle_pool()
        return sum(len(queue) for queue in conns.values()) if conns is not None else 0

    def _idle_pool(self) -> dict[Any, collections.deque[tuple[Any, float]]] | None:
        # aiohttp keeps idle connections in TCPConnector._conns: key -> deque of (protocol, time released), each
        # put on the right (so the first is the oldest). It bounds neither their number nor their buffers, and
        # closes them only every keepalive_timeout (so they live up to twice that), gracefully (a TLS one lingers up
        # to 30 s).
        return getattr(self._connector, "_conns", None)

    def trim_idle(self, keep: int | None = None) -> int:
        """Close idle connections past the keep-alive time, then the least recently used ones beyond ``keep``
        (default: ``idle_connections``); they are aborted, which frees their buffers at once. Returns how many.

        Each idle TLS connection holds its TLS buffers (~0.1 MiB, ~0.7 MiB after a large page): over a broad
        crawl's thousands of recently visited hosts this was most of a fetcher's memory."""
        conns = self._idle_pool()
        if not conns:
            return 0
        limit = self.max_idle if keep is None else keep
        expired_before = time.monotonic() - self.keepalive_s
        # Nothing to do when under the cap and none expired: told by the counts and each deque's first (its oldest).
        if sum(map(len, conns.values())) <= limit and all(q[0][1] >= expired_before for q in conns.values() if q):
            return 0
        idle = [(used, key, proto) for key, queue in conns.items() for proto, used in queue]
        victims = {id(proto) for used, _, proto in idle if used < expired_before}
        if len(idle) - len(victims) > limit:
            sessions = self._kept

            def _order(entry: tuple[float, Any, Any]) -> tuple[bool, float]:
                key = entry[1]
                return (key.host, key.port, key.is_ssl) in sessions, entry[0]

            alive = sorted((entry for entry in idle if id(entry[2]) not in victims), key=_order)
            victims.update(id(proto) for _, _, proto in alive[: len(alive) - limit])
        if not victims:
            return 0
        for key in {key for _, key, proto in idle if id(proto) in victims}:
            queue = conns[key]
            kept = collections.deque(entry for entry in queue if id(entry[0]) not in victims)
            for proto, _ in queue:
                if id(proto) in victims:
                    proto.abort()
            if kept:
                conns[key] = kept
            else:
                del conns[key]
        return len(victims)

    async def fetch(
        self,
        url: str,
        *,
        max_body: int | None = None,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
        parts: bool = False,
    ) -> Response:
        """GET ``url`` without following redirects. Raises a :mod:`webtrawl.errors` class on any failure.

        ``headers`` are sent besides the client's own (a recrawl's If-None-Match / If-Modified-Since) and those of
        ``url_headers``. With ``parts``, a body that came in more than one chunk is left in them (``body_parts``,
        ``body`` empty) for a caller that only writes it out: joining copied every body once more, and a big one
        into fresh memory (~2,600 page faults for 10 MiB). With the crawl's jar (``cookies``), what the answer's
        Set-Cookie changed is stored before this returns (or raises)."""
        if self._session is None:
            raise RuntimeError("HttpClient used outside 'async with'")
        if self.cookies is None:
            return await self._fetch_one(url, max_body, timeout, headers, parts)
        # stored before the page is returned, so before its host is released and another fetcher may lease it
        mark = self.cookies.jar.generation
        try:
            resp = await self._fetch_one(url, max_body, timeout, headers, parts)
        except WebtrawlError:
            await self.cookies.written(mark)
            raise
        await self.cookies.written(mark)
        return resp

    async def _fetch_one(
        self, url: str, max_body: int | None, timeout: float | None, headers: dict[str, str] | None, parts: bool
    ) -> Response:
        target = self._check_url(url)
        if self._url_headers is not None:
            headers = {**self._url_headers(url), **(headers or {})}
        if not self.proxies:
            return await self._get(url, target, max_body, timeout, None, headers, parts)
        await self.resolver.lookup(target.raw_host or "")  # the proxy connects to the target: the policy is ours
        for proxy in self.proxies.candidates(target.raw_host or ""):
            try:
                resp = await self._get(url, target, max_body, timeout, proxy, headers, parts)
            except ProxyDown:
                self.proxies.failed(proxy)  # the host was not reached: try it through the next proxy at once
                continue
            except TurnTimeout:
                raise  # this fetcher's load: says nothing of the proxy
            except (ConnectError, ConnectionReset, FetchTimeout):
                self.proxies.failed(proxy)  # dropped or stalled: the proxy's fault or the host's, not known yet
                raise
            self.proxies.answered(proxy)
            return resp
        raise NoLiveProxy("no live proxy: every --proxy failed its last requests")

    async def _get(
        self,
        url: str,
        target: URL,
        max_body: int | None,
        timeout: float | None,
        proxy: str | None,
        headers: dict[str, str] | None = None,
        parts: bool = False,
    ) -> Response:
        assert self._session is not None
        cap = self._max_body if max_body is None else max_body
        fetch_time = time.time()
        started = time.perf_counter()
        sent: list[asyncio.Transport] = []
        SENT_TRANSPORTS.set(sent)
        turn = Turn()
        try:
            async with (
                asyncio.timeout(self._fetch.timeouts.total if timeout is None else timeout),
                self._session.get(
                    target,
                    allow_redirects=False,
                    headers={**self._headers, **headers} if headers else self._headers,
                    proxy=proxy,
                ) as resp,
            ):
                if resp.status < _LOWEST_STATUS:
                    abort_transports(sent)  # its body is not read: the connection is not reused
                    raise BadHttp(f"not an HTTP/1.x answer: status {resp.status:03d} is not a status code")
                try:
                    chunks, truncated = await read_body(resp, cap, self._big_bodies, turn)
                except BaseException:
                    abort_transports(sent)  # before aiohttp's graceful close, and before the host's gap starts
                    raise
                if truncated:
                    abort_transports(sent)  # drop the connection: the rest of the body is still coming
                    resp.close()
                sent.clear()  # whole: the connection goes back to the pool
                body = chunks[0] if len(chunks) == 1 else b"" if parts else b"".join(chunks)
                self.bytes_read += sum(map(len, chunks))
                return Response(
                    status=resp.status,
                    reason=_as_received(resp.reason or ""),
                    http_version=f"{resp.version.major}.{resp.version.minor}" if resp.version else "1.1",
                    headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers],
                    body=body,
                    body_parts=chunks if parts and len(chunks) > 1 else [],
                    truncated=truncated,
                    ip=resp.peer if isinstance(resp, PeerResponse) else "",
                    request_headers=sent_to_target(resp.request_info.headers),
                    fetch_time=fetch_time,
                    elapsed_ms=(time.perf_counter() - started - turn.waited) * 1000.0,  # the server's time
                )
        except WebtrawlError:
            raise
        except Exception as exc:
            abort_transports(sent)  # given up before the body (timeout while waiting for the answer, broken reply)
            if isinstance(exc, TimeoutError) and turn.waiting:
                raise TurnTimeout("timed out while other big bodies took their turns") from exc
            raise map_error(exc) from exc
        except BaseException:
            abort_transports(sent)  # cancelled (a stop abandons the request): it must end at the server as well
            raise

    async def check_target(self, url: str) -> None:
        """Raise the PolicyError (or DnsError) ``fetch(url)`` would meet before sending anything: scheme, port, and
        the address policy for the host's addresses. Lets a render refuse a request before asking robots.txt."""
        target = self._check_url(url)
        await self.resolver.lookup(target.raw_host or "")

    def _check_url(self, url: str) -> URL:
        try:
            # Canonical URLs are already percent-encoded: send them byte for byte. Anything with spaces,
            # controls or non-ASCII is not canonical and goes through yarl's quoting (no CR/LF injection).
            target = URL(url, encoded=url.isascii() and url.isprintable() and " " not in url)
        except (ValueError, TypeError) as exc:
            raise BadUrl(f"cannot parse URL: {exc}") from None
        if target.scheme not in ("http", "https"):
            raise SchemeError(f"scheme {target.scheme or '(none)'!r} is not fetched")
        host = target.raw_host
        if not host or target.port is None:
            raise BadUrl("URL has no host")
        self.policy.check_port(target.port)
        literal = parse_ip_literal(host)
        if literal is not None:  # aiohttp connects to IP literals without asking the resolver
            self.policy.check_ip(str(literal))
        return target
