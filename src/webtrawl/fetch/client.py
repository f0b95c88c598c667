"""One GET, exactly as the server sent it: the fetcher's HTTP client.

The crawler archives what it received, so the body stays content-encoded (decompression happens in the
parser, with its own caps), headers keep their order and spelling, and redirects are returned rather than
followed (each hop goes back through the frontier for politeness and dedup). Every failure leaves as one
:mod:`webtrawl.errors` class with a short message, so the caller never needs to know aiohttp's exception zoo.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from types import TracebackType
from typing import Any, Self

import aiohttp
import msgspec
from aiohttp.client_exceptions import (
    ClientConnectorCertificateError,
    ClientConnectorDNSError,
    ClientConnectorError,
    ClientResponseError,
    ClientSSLError,
    InvalidURL,
)
from aiohttp.client_reqrep import ClientResponse
from aiohttp.connector import Connection
from yarl import URL

from webtrawl.config import CrawlConfig
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

    def header(self, name: str) -> str | None:
        """First value of header ``name`` (case-insensitive), or None."""
        low = name.lower()
        for key, value in self.headers:
            if key.lower() == low:
                return value
        return None


class _PeerResponse(ClientResponse):
    """Keeps the peer address while the connection is attached (it is released as soon as the body is in)."""

    peer = ""

    async def start(self, connection: Connection) -> ClientResponse:
        transport = connection.transport
        peername = transport.get_extra_info("peername") if transport is not None else None
        if peername:
            self.peer = str(peername[0])
        return await super().start(connection)


# How long an idle connection stays open. 5 s (two politeness delays) was measured: 400 MiB less per fetcher but
# 2.3x its CPU, because a host of a 3,000-6,000-host crawl often comes back within 15 s (benchmarks/RESULTS.md).
_KEEPALIVE_S = 15.0


class HttpClient:
    """Owns one aiohttp session (connection pool, resolver, TLS context) for a fetcher process."""

    def __init__(self, cfg: CrawlConfig, *, resolver: Resolver | None = None) -> None:
        self._cfg = cfg
        self.policy: AddressPolicy = resolver.policy if resolver else AddressPolicy(cfg.ip_allow, cfg.ports)
        self.resolver: Resolver = resolver or Resolver(cfg.resolve, self.policy, nameservers=cfg.nameservers)
        self._headers = {"User-Agent": cfg.user_agent, "Accept-Encoding": ACCEPT_ENCODING}
        self._ssl = _ssl_context(cfg)
        self.keepalive_s = _KEEPALIVE_S
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Self:
        connector = aiohttp.TCPConnector(
            resolver=self.resolver,
            use_dns_cache=False,  # the resolver caches, and must see every connect for the policy
            ssl=self._ssl,
            limit=max(1, self._cfg.concurrency) * 2,
            limit_per_host=0,  # the frontier already keeps one request per host in flight
            keepalive_timeout=self.keepalive_s,
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            cookie_jar=aiohttp.DummyCookieJar(),
            response_class=_PeerResponse,
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=self._cfg.timeouts.connect),
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
        if self._session is not None:
            await self._session.close()
            self._session = None
        await self.resolver.close()

    async def fetch(self, url: str, *, max_body: int | None = None, timeout: float | None = None) -> Response:
        """GET ``url`` without following redirects. Raises a :mod:`webtrawl.errors` class on any failure."""
        if self._session is None:
            raise RuntimeError("HttpClient used outside 'async with'")
        target = self._check_url(url)
        cap = self._cfg.limits.max_body if max_body is None else max_body
        fetch_time = time.time()
        started = time.perf_counter()
        try:
            async with (
                asyncio.timeout(self._cfg.timeouts.total if timeout is None else timeout),
                self._session.get(target, allow_redirects=False, headers=self._headers) as resp,
            ):
                body, truncated = await _read_body(resp, cap)
                if truncated:
                    resp.close()  # drop the connection: the rest of the body is still coming
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
            raise _map_error(exc) from exc

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


async def _read_body(resp: ClientResponse, cap: int) -> tuple[bytes, bool]:
    """Stream the body up to ``cap`` bytes; reading one byte past it tells a cut body from an exact fit."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in resp.content.iter_any():
        chunks.append(chunk)
        size += len(chunk)
        if size > cap:
            return b"".join(chunks)[:cap], True
    return b"".join(chunks), False


def _map_error(exc: Exception) -> TransportError | BadUrl:
    """aiohttp/OS exception -> the :mod:`webtrawl.errors` class a user reads in the JSONL ``error`` field."""
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


def _ssl_context(cfg: CrawlConfig) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.sslobject_class = _NoDecodedPeerCert
    if cfg.ca_file is not None:
        try:
            ctx.load_verify_locations(cafile=str(cfg.ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"--ca-file {cfg.ca_file}: {exc}") from None
    if cfg.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx
