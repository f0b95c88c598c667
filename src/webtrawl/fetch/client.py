"""One GET, exactly as the server sent it: the fetcher's HTTP client.

The crawler archives what it received, so the body stays content-encoded (decompression happens in the
parser, with its own caps), headers keep their order and spelling, and redirects are returned rather than
followed (each hop goes back through the frontier for politeness and dedup). Every failure leaves as one
:mod:`webtrawl.errors` class with a short message, so the caller never needs to know aiohttp's exception zoo.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Self

import aiohttp
import msgspec
from aiohttp.client_exceptions import (
    ClientConnectorCertificateError,
    ClientConnectorDNSError,
    ClientConnectorError,
    ClientProxyConnectionError,
    ClientResponseError,
    ClientSSLError,
    InvalidURL,
)
from aiohttp.client_reqrep import ClientRequest, ClientResponse
from aiohttp.connector import Connection
from yarl import URL

from webtrawl.config import FetchOptions, Limits
from webtrawl.errors import (
    BadUrl,
    ConfigError,
    ConnectError,
    ConnectionReset,
    DnsError,
    FetchTimeout,
    SchemeError,
    TlsError,
    TransportError,
    WebtrawlError,
)
from webtrawl.fetch.addrpolicy import AddressPolicy, parse_ip_literal
from webtrawl.fetch.dns import Resolver
from webtrawl.fetch.proxies import ProxyPool
from webtrawl.messages import Exchange
from webtrawl.values import parse_headers

ACCEPT_ENCODING = "gzip, deflate, br, zstd"
_MAX_MESSAGE = 200


class Response(msgspec.Struct):
    """A complete HTTP answer, any status. ``body`` is still content-encoded; ``truncated``: cut at a cap."""

    status: int
    reason: str = ""
    http_version: str = "1.1"
    headers: list[tuple[str, str]] = msgspec.field(default_factory=list)  # as received, latin-1 decoded
    body: bytes = b""
    truncated: bool = False
    ip: str = ""
    request_headers: list[tuple[str, str]] = msgspec.field(default_factory=list)
    fetch_time: float = 0.0  # epoch seconds at request start
    elapsed_ms: float = 0.0
    # Rendered by a browser (fetch/render/): why, the DOM after the scripts ran, the other requests it made (as
    # received) and the ones it refused (reason -> count). The fields above stay the navigation response.
    render_reason: str = ""
    dom: bytes | None = None
    exchanges: list[Exchange] = msgspec.field(default_factory=list)
    render_blocked: dict[str, int] = msgspec.field(default_factory=dict)

    def wire(self) -> dict[str, Any]:
        """The answer as received (what a Page and a rendered page's Exchange both carry), as keyword arguments."""
        return {
            "status": self.status,
            "reason": self.reason,
            "http_version": self.http_version,
            "headers": self.headers,
            "body": self.body,
            "truncated": self.truncated,
            "request_headers": self.request_headers,
            "ip": self.ip,
            "fetch_time": self.fetch_time,
        }

    def header(self, name: str) -> str | None:
        """First value of header ``name`` (case-insensitive), or None."""
        low = name.lower()
        for key, value in self.headers:
            if key.lower() == low:
                return value
        return None


# The transports of the requests the current task has sent (set by HttpClient.fetch, filled by _TrackedRequest).
_TRANSPORTS: contextvars.ContextVar[list[asyncio.Transport]] = contextvars.ContextVar("webtrawl_transports")


class _TrackedRequest(ClientRequest):
    """Remembers the transport a request goes out on, so that a request given up can be aborted (see fetch)."""

    async def send(self, conn: Connection) -> ClientResponse:
        sent = _TRANSPORTS.get(None)
        if sent is not None and conn.transport is not None:
            sent.append(conn.transport)
        return await super().send(conn)


def _abort(transports: list[asyncio.Transport]) -> None:
    """End the connections of a request given up, at once and at the server too.

    aiohttp closes such a connection gracefully: for TLS that sends close_notify and then keeps the socket open
    (reading and dropping what comes) until the server answers or ``ssl_shutdown_timeout`` (30 s) passes. A server
    that does not read while it sends never sees it and goes on sending while the host's next request starts: two
    requests at once as the server sees them. Aborting closes the socket now, whatever was already closed."""
    for transport in transports:
        with contextlib.suppress(Exception):
            transport.abort()
    transports.clear()


class _PeerResponse(ClientResponse):
    """Keeps the peer address while the connection is attached (it is released as soon as the body is in)."""

    peer = ""

    async def start(self, connection: Connection) -> ClientResponse:
        transport = connection.transport
        peername = transport.get_extra_info("peername") if transport is not None else None
        if peername:
            self.peer = str(peername[0])
        return await super().start(connection)


_TRIM_EVERY_S = 0.25  # how often idle connections past their keep-alive or beyond the cap are closed
# How long an idle connection stays open. 5 s (two politeness delays) was measured: 400 MiB less per fetcher but
# 2.3x its CPU, because a host of a 3,000-6,000-host crawl often comes back within 15 s (benchmarks/RESULTS.md).
_KEEPALIVE_S = 15.0
# The kernel's receive buffer of a fetch connection (Linux doubles the value: a 128 KiB window, ~1.3 MB/s at 100 ms
# round trip, so a typical page needs no more round trips than with autotuning). uvloop reads a TLS connection's
# socket into a 256 KiB buffer it keeps for the connection's life: with the autotuned multi-MiB buffer every read
# of a big answer filled all of it, and an idle connection kept those pages resident.
RECV_BUFFER = 64 * 1024
_Origin = tuple[str, int | None, bool]  # host, port, TLS: the part of aiohttp's ConnectionKey that names an origin


def _origin_of(url: URL) -> _Origin:
    return url.raw_host or "", url.port, url.scheme == "https"


# Bodies past BIG_BODY bytes (few pages: most HTML is < 1 MiB) are read BIG_BODIES at a time per fetcher.
BIG_BODY = 1024 * 1024
BIG_BODIES = 2


def _open_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """A socket with a fixed receive buffer (see RECV_BUFFER), set before connect so the window is announced so."""
    family, kind, proto = addr_info[0], addr_info[1], addr_info[2]
    sock = socket.socket(family=family, type=kind, proto=proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER)
    return sock


class HttpClient:
    """Owns one aiohttp session (connection pool, resolver, TLS context) for a fetcher process."""

    def __init__(
        self,
        fetch: FetchOptions,
        limits: Limits,
        *,
        resolver: Resolver | None = None,
        url_headers: Callable[[str], dict[str, str]] | None = None,
    ) -> None:
        self._fetch = fetch
        self._max_body = limits.max_body
        self._url_headers = url_headers  # more headers for some URLs (a rules file's headers: fetch/rulehints.py)
        self.policy: AddressPolicy = resolver.policy if resolver else AddressPolicy(fetch.ip_allow, fetch.ports)
        self.resolver: Resolver = resolver or Resolver(fetch.resolve, self.policy, nameservers=fetch.nameservers)
        self._headers = {"User-Agent": fetch.user_agent, "Accept-Encoding": ACCEPT_ENCODING}
        self._headers.update(parse_headers(fetch.header))
        self.proxies = ProxyPool(fetch.proxy)
        self._ssl = _ssl_context(fetch)
        self.keepalive_s = _KEEPALIVE_S
        self.max_idle = max(0, fetch.idle_connections)
        self._session: aiohttp.ClientSession | None = None
        self._connector: aiohttp.TCPConnector | None = None
        self._trimmer: asyncio.Task[None] | None = None
        self._big_bodies = asyncio.Semaphore(BIG_BODIES)
        self._kept: dict[_Origin, int] = {}  # origins of sleeping host sessions (a dict: Counter's del is Python)

    async def __aenter__(self) -> Self:
        connector = aiohttp.TCPConnector(
            resolver=self.resolver,
            use_dns_cache=False,  # the resolver caches, and must see every connect for the policy
            ssl=self._ssl,
            limit=max(1, self._fetch.concurrency) * 2,
            limit_per_host=0,  # the frontier already keeps one request per host in flight
            keepalive_timeout=self.keepalive_s + 1.0,  # a backstop: trim_idle() closes them first, and aborts
            socket_factory=_open_socket,
        )
        self._connector = connector
        self._trimmer = asyncio.create_task(self._trim_loop())
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            # --cookies: kept per host (domain rules) for this process's life: a host session's pages share them
            cookie_jar=aiohttp.CookieJar(unsafe=True) if self._fetch.cookies else aiohttp.DummyCookieJar(),
            response_class=_PeerResponse,
            request_class=_TrackedRequest,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._fetch.timeouts.connect),
            max_line_size=16384,
            max_field_size=16384,
            max_headers=256,
        )
        return self

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
        # aiohttp keeps idle connections in TCPConnector._conns: key -> deque of (protocol, time released), taken
        # from the right (most recent first). It bounds neither their number nor their buffers, and closes them
        # only every keepalive_timeout (so they live up to twice that), gracefully (a TLS one lingers up to 30 s).
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
    ) -> Response:
        """GET ``url`` without following redirects. Raises a :mod:`webtrawl.errors` class on any failure.

        ``headers`` are sent besides the client's own (a recrawl's If-None-Match / If-Modified-Since) and those of
        ``url_headers``."""
        if self._session is None:
            raise RuntimeError("HttpClient used outside 'async with'")
        target = self._check_url(url)
        if self._url_headers is not None:
            headers = {**self._url_headers(url), **(headers or {})}
        if not self.proxies:
            return await self._get(url, target, max_body, timeout, None, headers)
        await self.resolver.lookup(target.raw_host or "")  # the proxy connects to the target: the policy is ours
        for proxy in self.proxies.candidates(target.raw_host or ""):
            try:
                return await self._get(url, target, max_body, timeout, proxy, headers)
            except _ProxyDown:
                self.proxies.dead(proxy)  # the host was not reached: try it through the next proxy at once
        raise ConnectError("no live proxy (every --proxy failed to connect within the last minute)")

    async def _get(
        self,
        url: str,
        target: URL,
        max_body: int | None,
        timeout: float | None,
        proxy: str | None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        assert self._session is not None
        cap = self._max_body if max_body is None else max_body
        fetch_time = time.time()
        started = time.perf_counter()
        sent: list[asyncio.Transport] = []
        _TRANSPORTS.set(sent)
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
                try:
                    body, truncated = await _read_body(resp, cap, self._big_bodies)
                except BaseException:
                    _abort(sent)  # before aiohttp's graceful close, and before the host's gap starts
                    raise
                if truncated:
                    _abort(sent)  # drop the connection: the rest of the body is still coming
                    resp.close()
                sent.clear()  # whole: the connection goes back to the pool
                return Response(
                    status=resp.status,
                    reason=resp.reason or "",
                    http_version=f"{resp.version.major}.{resp.version.minor}" if resp.version else "1.1",
                    headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers],
                    body=body,
                    truncated=truncated,
                    ip=resp.peer if isinstance(resp, _PeerResponse) else "",
                    request_headers=[(str(k), str(v)) for k, v in resp.request_info.headers.items()],
                    fetch_time=fetch_time,
                    elapsed_ms=(time.perf_counter() - started) * 1000.0,
                )
        except WebtrawlError:
            raise
        except Exception as exc:
            _abort(sent)  # given up before the body (timeout while waiting for the answer, broken reply)
            raise _map_error(exc) from exc
        except BaseException:
            _abort(sent)  # cancelled (a stop abandons the request): it must end at the server as well
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


async def _read_body(resp: ClientResponse, cap: int, big: asyncio.Semaphore) -> tuple[bytes, bool]:
    """Stream the body up to ``cap`` bytes; reading one byte past it tells a cut body from an exact fit.

    A body that grows past ``BIG_BODY`` reads on only with a permit of ``big``: a fetcher holds a few such bodies
    at once, not one per request in flight (128 pages of 10 MiB would be 2.5 GiB with their copies). Waiting costs
    no memory: aiohttp stops reading the socket while its buffer is full. The chunks are joined once, the last one
    cut before the join: a body at the cap is held twice at the peak (chunks and result), not three times."""
    chunks: list[bytes] = []
    size = 0
    permit = False
    try:
        async for chunk in resp.content.iter_any():
            size += len(chunk)
            if size > cap:
                chunks.append(chunk[: len(chunk) - (size - cap)])
                return b"".join(chunks), True
            chunks.append(chunk)
            if size > BIG_BODY and not permit:
                await big.acquire()
                permit = True
        return b"".join(chunks), False  # one chunk: CPython returns it as is
    finally:
        if permit:
            big.release()


class _ProxyDown(ConnectError):
    """The proxy itself could not be reached (the target was not contacted)."""


def _map_error(exc: Exception) -> TransportError | BadUrl:
    """aiohttp/OS exception -> the :mod:`webtrawl.errors` class a user reads in the JSONL ``error`` field."""
    if isinstance(exc, ClientProxyConnectionError):
        return _ProxyDown(_short(exc.os_error) if exc.os_error else _short(exc))
    if isinstance(exc, ClientConnectorCertificateError):
        return TlsError(_short(exc.certificate_error))
    if isinstance(exc, ClientSSLError | ssl.SSLError | ssl.CertificateError):
        return TlsError(_short(exc))
    if isinstance(exc, TimeoutError):  # asyncio.timeout, aiohttp's connect/read timeouts
        return FetchTimeout("timed out")
    if isinstance(exc, ClientConnectorDNSError):
        return DnsError(_short(exc))
    if isinstance(exc, ClientConnectorError):
        return ConnectError(_short(exc.os_error) if exc.os_error else _short(exc))
    if isinstance(exc, InvalidURL | ValueError):
        return BadUrl(_short(exc))
    if isinstance(exc, aiohttp.ClientError | ConnectionError | OSError):
        # server hung up, closed mid-body, or sent something that is not HTTP/1.x framing
        return ConnectionReset(_short(exc))
    raise exc


def _short(exc: BaseException) -> str:
    raw = exc.message if isinstance(exc, ClientResponseError) else str(exc)
    text = " ".join(raw.replace("\\n", " ").split()) or type(exc).__name__
    if type(exc).__name__ not in text:
        text = f"{type(exc).__name__}: {text}"
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


class _NoDecodedPeerCert(ssl.SSLObject):
    """An SSLObject whose ``getpeercert()`` skips decoding the certificate into a dict.

    uvloop (and asyncio) call ``getpeercert()`` after every handshake only to fill the transport's ``peercert``
    extra info, which nothing here reads; decoding the chain's leaf into Python objects was ~11% of a fetcher's
    CPU in a broad crawl. Verification (chain and host name) is OpenSSL's, during the handshake, and the DER form
    (``binary_form=True``, what aiohttp's fingerprint check reads) is still returned.
    """

    def getpeercert(self, binary_form: bool = False) -> Any:
        if binary_form:
            return super().getpeercert(True)
        return {}


def _ssl_context(fetch: FetchOptions) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.sslobject_class = _NoDecodedPeerCert
    if fetch.ca_file is not None:
        try:
            ctx.load_verify_locations(cafile=str(fetch.ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"--ca-file {fetch.ca_file}: {exc}") from None
    if fetch.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx
