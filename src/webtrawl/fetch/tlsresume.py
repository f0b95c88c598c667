"""TLS session resumption per host: the next connection to a host offers the session of the previous one.

A broad crawl comes back to a host every few seconds or minutes, long after the idle connection is closed, so
most page fetches open a new TLS connection. A resumed TLS 1.3 handshake skips the certificate chain and its
verification: in the profile of ``trawl bench`` the handshake was the largest single cost of a fetcher, and a
resumed one costs the client about 0.55 ms of CPU instead of 0.8 ms (the server saves its signature too).

The hook is :meth:`ssl.SSLContext.wrap_bio`, which asyncio and uvloop call for every client connection with the
host name: no change to aiohttp. The ``SSLObject`` of a connection only holds a resumable session after its
handshake and first read (TLS 1.3 sends tickets then), so the last object per host is kept and turned into its
session once a few hundred newer connections have been made. A ticket the server no longer accepts just means a
full handshake; the certificate is verified as always whenever the server does not resume.
"""

from __future__ import annotations

import ssl
from collections import OrderedDict, deque

_MAX_HOSTS = 20_000  # sessions kept (about 1-2 KB each)
_HARVEST_AFTER = 256  # connections later, a connection's handshake is long over: keep its session only


class ResumingContext(ssl.SSLContext):
    """A client context that offers each host name the session of its previous connection."""

    _entries: OrderedDict[str, ssl.SSLObject | ssl.SSLSession]
    _recent: deque[str]

    def _tables(self) -> tuple[OrderedDict[str, ssl.SSLObject | ssl.SSLSession], deque[str]]:
        try:
            return self._entries, self._recent
        except AttributeError:
            self._entries, self._recent = OrderedDict(), deque()
            return self._entries, self._recent

    def wrap_bio(
        self,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
        server_side: bool = False,
        server_hostname: str | bytes | None = None,
        session: ssl.SSLSession | None = None,
    ) -> ssl.SSLObject:
        host = server_hostname.decode() if isinstance(server_hostname, bytes) else server_hostname
        if server_side or not host:
            return super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)
        entries, recent = self._tables()
        if session is None:
            session = _session_of(entries.get(host))
        try:
            obj = super().wrap_bio(incoming, outgoing, server_side, server_hostname, session)
        except ValueError:  # a session this context cannot use: connect without it
            obj = super().wrap_bio(incoming, outgoing, server_side, server_hostname, None)
        entries[host] = obj
        entries.move_to_end(host)
        recent.append(host)
        if len(recent) > _HARVEST_AFTER:
            self._harvest(recent.popleft())
        while len(entries) > _MAX_HOSTS:
            entries.popitem(last=False)
        return obj

    def _harvest(self, host: str) -> None:
        entries = self._tables()[0]
        entry = entries.get(host)
        if isinstance(entry, ssl.SSLObject):
            session = _session_of(entry)
            if session is None:
                del entries[host]
            else:
                entries[host] = session


def _session_of(entry: ssl.SSLObject | ssl.SSLSession | None) -> ssl.SSLSession | None:
    if isinstance(entry, ssl.SSLSession):
        return entry
    if entry is None:
        return None
    try:
        return entry.session
    except (ssl.SSLError, ValueError):
        return None


def resuming_context() -> ResumingContext:
    """What ``ssl.create_default_context()`` gives a client (system CAs, host name check), with resumption."""
    ctx = ResumingContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
    return ctx
