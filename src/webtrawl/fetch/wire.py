"""The aiohttp-level parts of one GET (:mod:`webtrawl.fetch.client`): requests that remember their transport so a
request given up can be aborted, responses that keep the peer address, sockets with a fixed receive buffer, the
capped body read, aiohttp's exceptions mapped to :mod:`webtrawl.errors`, the TLS context, and the --cookies jar.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import re
import socket
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from http.cookies import Morsel
from typing import Any

import aiohttp
from aiohttp.client_exceptions import (
    ClientConnectorCertificateError,
    ClientConnectorDNSError,
    ClientConnectorError,
    ClientOSError,
    ClientProxyConnectionError,
    ClientResponseError,
    ClientSSLError,
    InvalidURL,
    ServerDisconnectedError,
)
from aiohttp.client_reqrep import ClientRequest, ClientResponse
from aiohttp.connector import Connection
from aiohttp.http_exceptions import HttpProcessingError
from yarl import URL

from webtrawl.config import FetchOptions
from webtrawl.domains import is_public_suffix
from webtrawl.errors import (
    BadHttp,
    BadUrl,
    ConfigError,
    ConnectError,
    ConnectionReset,
    DnsError,
    FetchTimeout,
    TlsError,
    TransportError,
)
from webtrawl.fetch.tolerant import BrokenBody

_MAX_MESSAGE = 200
_DOMAIN_ATTR_RE = re.compile(r";\s*domain\s*=([^;]*)", re.IGNORECASE)  # a Set-Cookie line's Domain attributes

# The transports of the requests the current task has sent (set by HttpClient.fetch, filled by TrackedRequest).
SENT_TRANSPORTS: contextvars.ContextVar[list[asyncio.Transport]] = contextvars.ContextVar("webtrawl_transports")


class RawCookieJar(aiohttp.CookieJar):
    """--cookies' jar: a cookie goes back as the server set it (the value's bytes, quotes included), as browsers send
    it. aiohttp's jar either quotes a value with a byte outside SimpleCookie's few legal ones (a base64 "=", "/",
    JSON, UTF-8) or, with ``quote_cookie=False``, strips the quotes the server put (``sid="a b"`` went back as
    ``sid=a b``): servers that keep quotes (PHP) read either as another value, and the session is lost."""

    def __init__(self) -> None:
        super().__init__(unsafe=True, quote_cookie=False)

    def update_cookies_from_headers(self, headers: Sequence[str], response_url: URL) -> None:
        """A cookie whose Domain is a public suffix (``Domain=com``, ``co.uk``, ``github.io``) other than the host's
        own name is refused, as browsers refuse it (RFC 6265 5.3 step 5): aiohttp kept it and sent it to every
        other site under that suffix (one site's session id to another, or a cookie planted for all of them)."""
        host = (response_url.raw_host or "").lower()
        kept = [line for line in headers if not _for_a_public_suffix(line, host)]
        super().update_cookies_from_headers(kept, response_url)

    def _build_morsel(self, cookie: Morsel[str]) -> Morsel[str]:
        morsel: Morsel[str] = Morsel()
        # __setstate__, as aiohttp does: Morsel.set() would refuse the bytes a server may send (UTF-8, quotes)
        morsel.__setstate__({"key": cookie.key, "value": cookie.value, "coded_value": cookie.coded_value})  # type: ignore[attr-defined]
        return morsel


def _for_a_public_suffix(set_cookie: str, host: str) -> bool:
    for domain in _DOMAIN_ATTR_RE.findall(set_cookie):
        domain = domain.strip().strip(".").lower()
        if domain and domain != host and is_public_suffix(domain):
            return True
    return False


class TrackedRequest(ClientRequest):
    """Remembers the transport a request goes out on, so that a request given up can be aborted (see fetch)."""

    async def send(self, conn: Connection) -> ClientResponse:
        sent = SENT_TRANSPORTS.get(None)
        if sent is not None and conn.transport is not None:
            sent.append(conn.transport)
        return await super().send(conn)


def abort_transports(transports: list[asyncio.Transport]) -> None:
    """End the connections of a request given up, at once and at the server too.

    aiohttp closes such a connection gracefully: for TLS that sends close_notify and then keeps the socket open
    (reading and dropping what comes) until the server answers or ``ssl_shutdown_timeout`` (30 s) passes. A server
    that does not read while it sends never sees it and goes on sending while the host's next request starts: two
    requests at once as the server sees them. Aborting closes the socket now, whatever was already closed."""
    for transport in transports:
        with contextlib.suppress(Exception):
            transport.abort()
    transports.clear()


class Unanswered(aiohttp.ClientConnectionError):
    """A new connection closed or reset before the answer's head (see :class:`PeerResponse`)."""


class PeerResponse(ClientResponse):
    """Keeps the peer address while the connection is attached (it is released as soon as the body is in).

    A connection closed or reset before the answer's head is a reset (:func:`map_error`), which aiohttp sends again
    at once on a new connection. That is right for a kept-alive connection the server closed as the request went out
    (its idle time ran out: browsers send it again too), not for a new one: a server that hangs up on the crawler
    (nginx's 444, a bot wall, an overloaded server) got every try twice, milliseconds apart, with no --delay between
    them. On a new connection it is :class:`Unanswered`, which aiohttp does not send again; the crawl tries it again
    after the host's back-off, as any reset."""

    peer = ""

    async def start(self, connection: Connection) -> ClientResponse:
        transport = connection.transport
        peername = transport.get_extra_info("peername") if transport is not None else None
        if peername:
            self.peer = str(peername[0])
        try:
            return await super().start(connection)
        except (ServerDisconnectedError, ClientOSError) as exc:
            if getattr(connection.protocol, "requests", 0) > 1:
                raise  # a kept-alive connection: sent again on a new one
            raise Unanswered(_short(exc)) from exc


# The kernel's receive buffer of a fetch connection (Linux doubles the value: a 128 KiB window, ~1.3 MB/s at 100 ms
# round trip, so a typical page needs no more round trips than with autotuning). uvloop reads a TLS connection's
# socket into a 256 KiB buffer it keeps for the connection's life: with the autotuned multi-MiB buffer every read
# of a big answer filled all of it, and an idle connection kept those pages resident.
RECV_BUFFER = 64 * 1024


# Bodies past BIG_BODY bytes (few pages: most HTML is < 1 MiB) are read BIG_BODIES at a time per fetcher.
BIG_BODY = 1024 * 1024
BIG_BODIES = 2


def open_socket(addr_info: tuple[Any, ...]) -> socket.socket:
    """A socket with a fixed receive buffer (see RECV_BUFFER), set before connect so the window is announced so."""
    family, kind, proto = addr_info[0], addr_info[1], addr_info[2]
    sock = socket.socket(family=family, type=kind, proto=proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECV_BUFFER)
    return sock


@dataclass(slots=True)
class Turn:
    """How a body's wait for its turn went (see read_body): the caller tells a timeout while waiting by it."""

    waiting: bool = False  # waiting for a turn right now
    waited: float = 0.0  # seconds spent waiting


async def read_body(
    resp: ClientResponse, cap: int, big: asyncio.Semaphore, turn: Turn | None = None
) -> tuple[list[bytes], bool]:
    """Stream the body up to ``cap`` bytes, in the chunks it came in; reading one byte past it tells a cut body from
    an exact fit.

    A body that grows past ``BIG_BODY`` reads on only with a permit of ``big``: a fetcher holds a few such bodies
    at once, not one per request in flight (128 pages of 10 MiB would be 2.5 GiB). Waiting costs no memory: aiohttp
    stops reading the socket while its buffer is full. The wait is the fetcher's, not the server's: ``turn`` says
    how long it took and whether the request is waiting now (a time limit that runs out then is not the host's
    fault; the limit itself must hold, self-fencing counts on it). The chunks are not joined here: a caller that
    only writes the body out (the parsers' channel) writes them as they are (see HttpClient.fetch's ``parts``)."""
    chunks: list[bytes] = []
    size = 0
    permit = False
    turn = turn if turn is not None else Turn()
    try:
        async for chunk in resp.content.iter_any():
            size += len(chunk)
            if size > cap:
                chunks.append(chunk[: len(chunk) - (size - cap)])
                return chunks, True
            chunks.append(chunk)
            if size > BIG_BODY and not permit:
                asked = time.monotonic()
                turn.waiting = True
                await big.acquire()
                permit = True
                turn.waiting = False
                turn.waited = time.monotonic() - asked
        return chunks, False
    finally:
        if permit:
            big.release()


class ProxyDown(ConnectError):
    """The proxy itself could not be reached (the target was not contacted)."""


def map_error(exc: Exception) -> TransportError | BadUrl:
    """aiohttp/OS exception -> the :mod:`webtrawl.errors` class a user reads in the JSONL ``error`` field."""
    if isinstance(exc, ClientProxyConnectionError):
        return ProxyDown(_short(exc.os_error) if exc.os_error else _short(exc))
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
    if isinstance(exc, BrokenBody) or (
        isinstance(exc, ClientResponseError) and isinstance(exc.__cause__, HttpProcessingError)
    ):
        # the parser refused the answer's bytes (fetch/tolerant.py mends what browsers pass over): not a cut connection
        return BadHttp(_clip("not an HTTP/1.x answer: " + _text(exc)))
    if isinstance(exc, Unanswered):
        return ConnectionReset(str(exc))
    if isinstance(exc, aiohttp.ClientError | ConnectionError | OSError):
        # server hung up, closed mid-body, or sent something that is not HTTP/1.x framing
        return ConnectionReset(_short(exc))
    raise exc


def _text(exc: BaseException) -> str:
    raw = exc.message if isinstance(exc, ClientResponseError) else str(exc)
    return " ".join(raw.replace("\\n", " ").split())


def _short(exc: BaseException) -> str:
    text = _text(exc) or type(exc).__name__
    if type(exc).__name__ not in text:
        text = f"{type(exc).__name__}: {text}"
    return _clip(text)


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


# The most plaintext one TLS record carries (RFC 8446 5.1, RFC 5246 6.2.1), and so one SSL_read (no pipelining).
_RECORD_MAX = 16 * 1024


class _LeanSSLObject(ssl.SSLObject):
    """An SSLObject without two costs the fetcher does not need to pay.

    ``getpeercert()`` skips decoding the certificate into a dict: uvloop (and asyncio) call it after every
    handshake only to fill the transport's ``peercert`` extra info, which nothing here reads; decoding the chain's
    leaf into Python objects was ~11% of a fetcher's CPU in a broad crawl. Verification (chain and host name) is
    OpenSSL's, during the handshake, and the DER form (``binary_form=True``, what aiohttp's fingerprint check
    reads) is still returned.

    ``read(n)`` asks OpenSSL for at most one record's plaintext: uvloop reads with ``n`` = 256 KiB, for which
    CPython allocates a 256 KiB bytes object per record (16 KiB at most) and shrinks it. With the fetcher's mmap
    threshold (heap.return_freed_buffers) each of those was an mmap, page faults, an mremap and a munmap: 0.37 ms of
    CPU per 185 KB page read in a micro-benchmark. A 16 KiB bytes object comes from the heap and is decrypted into
    in place (an earlier reused 256 KiB buffer cost a copy of every record out of it).
    """

    def getpeercert(self, binary_form: bool = False) -> Any:
        if binary_form:
            return super().getpeercert(True)
        return {}

    def read(self, len: int = 1024, buffer: Any = None) -> Any:
        if buffer is None and len > _RECORD_MAX:
            len = _RECORD_MAX  # what one SSL_read can return anyway: the caller reads again for the rest
        return super().read(len, buffer)


def ssl_context(fetch: FetchOptions) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.sslobject_class = _LeanSSLObject
    if fetch.ca_file is not None:
        try:
            ctx.load_verify_locations(cafile=str(fetch.ca_file))
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(f"--ca-file {fetch.ca_file}: {exc}") from None
    if fetch.insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx
