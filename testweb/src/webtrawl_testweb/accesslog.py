"""The test web's access log and the checks tests run on it.

Each request is one JSON line: ``start_ms``/``end_ms`` (wall clock, ms, sub-ms precision), ``host`` (from the
Host header, lower case, no port), ``port`` and ``scheme`` (of the socket that took the request), ``method``,
``path`` (path + query as sent), ``status``, ``bytes`` (body bytes written), ``user_agent``, ``client_port`` and,
on the realistic web, ``kind`` (what was served: see :class:`webtrawl_testweb.realistic.RealReply`).

``end_ms`` is stamped just *before* the server's last write of the response: the crawler cannot have read the
whole response earlier than that. A stamp taken after the write would be late whenever the server's thread is
descheduled under CPU load, and then a crawler that kept its gap exactly would show up as a violation. The start is
stamped when the request arrived, no earlier than the crawler sent it. So a gap measured here is never shorter than
the gap the crawler kept: a politeness violation found here is real. "Arrived" is when the server first read the
request's bytes (:class:`webtrawl_testweb.server.StampingServer`), not when its handler started: that comes at least
two turns of the server's event loop later, seconds later on a loaded machine, and a late start stamp hides a
violation (the gap before the request looks longer than it was).
"""

from __future__ import annotations

import os
import threading
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import msgspec

from webtrawl_testweb.model import build_url

ROBOTS_PATHS = frozenset({"/robots.txt", "/robots-real.txt"})


class LogEntry(msgspec.Struct, frozen=True):
    start_ms: float
    end_ms: float
    host: str
    port: int
    scheme: str
    method: str
    path: str
    status: int
    nbytes: int = msgspec.field(name="bytes")
    user_agent: str = ""
    client_port: int = 0  # the client's source port (0: unknown): requests with the same one shared a connection
    kind: str = ""  # what the realistic web served (``page``, ``robots-big``, ``fault-bomb``, ...); "" elsewhere
    decoded: int = 0  # the body's bytes before its Content-Encoding (the realistic web's encoded pages); 0: as sent

    @property
    def url(self) -> str:
        return build_url(self.scheme, self.host, self.port, self.path)


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(LogEntry)


class AccessLog:
    """Appends entries to a file (one ``write`` per line: always complete) and, if ``keep``, to memory.

    An entry is written after its response was sent, so a client can hold the whole response before the entry
    exists. The server therefore brackets each request with :meth:`begin` / :meth:`end`, and :meth:`mark` and
    :meth:`entries` first wait until no request is in flight: once a crawl has its responses, its entries are
    all there. ``mark()`` and ``entries(since=mark)`` let several crawls against one server each look at their
    own requests. Entries are in the order requests finished; sort by ``start_ms`` for request order.
    """

    def __init__(self, path: Path | None, *, keep: bool = True, settle_timeout: float = 30.0) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) if path is not None else -1
        self._keep = keep
        self._settle_timeout = settle_timeout
        self._entries: list[LogEntry] = []
        self._in_flight = 0
        self._cond = threading.Condition()

    def begin(self) -> None:
        with self._cond:
            self._in_flight += 1

    def end(self, entry: LogEntry) -> None:
        self.add(entry)
        with self._cond:
            self._in_flight -= 1
            if not self._in_flight:
                self._cond.notify_all()

    def add(self, entry: LogEntry) -> None:
        if self._fd >= 0:
            os.write(self._fd, _encoder.encode(entry) + b"\n")
        if self._keep:
            with self._cond:
                self._entries.append(entry)

    def _settled(self) -> None:
        """Wait (lock held) until no request is in flight."""
        if not self._cond.wait_for(lambda: not self._in_flight, self._settle_timeout):
            raise TimeoutError(f"{self._in_flight} requests still in flight after {self._settle_timeout}s")

    def mark(self) -> int:
        with self._cond:
            self._settled()
            return len(self._entries)

    def entries(self, since: int = 0) -> list[LogEntry]:
        if not self._keep:
            raise RuntimeError("this access log keeps no entries in memory; read its file with load()")
        with self._cond:
            self._settled()
            return self._entries[since:]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def load(path: Path) -> list[LogEntry]:
    with path.open("rb") as f:
        return [_decoder.decode(line) for line in f if line.strip()]


def fetched_urls(entries: Iterable[LogEntry], *, ignore_paths: Collection[str] = ROBOTS_PATHS) -> set[str]:
    """The URLs requested, robots files left out by default."""
    return {e.url for e in entries if e.path not in ignore_paths}


def duplicate_fetches(entries: Iterable[LogEntry], *, ignore_paths: Collection[str] = ROBOTS_PATHS) -> dict[str, int]:
    """URL -> times requested, for URLs requested more than once (robots files left out by default)."""
    counts: dict[str, int] = defaultdict(int)
    for e in entries:
        if e.path not in ignore_paths:
            counts[e.url] += 1
    return {url: n for url, n in counts.items() if n > 1}


def robots_first_violations(entries: Iterable[LogEntry]) -> list[LogEntry]:
    """For each origin (scheme, host, port): its first request, if that is not ``/robots.txt``."""
    first: dict[tuple[str, str, int], LogEntry] = {}
    for e in entries:
        key = (e.scheme, e.host, e.port)
        if key not in first or e.start_ms < first[key].start_ms:
            first[key] = e
    return sorted((e for e in first.values() if e.path != "/robots.txt"), key=lambda e: e.start_ms)


@dataclass(frozen=True, slots=True)
class Violation:
    """``later`` began less than ``required_s`` after ``earlier`` (the latest-ending one before it) ended."""

    host: str
    earlier: LogEntry
    later: LogEntry
    gap_s: float  # negative when the two overlapped
    required_s: float


def politeness_violations(
    entries: Iterable[LogEntry],
    min_gap_s: float,
    crawl_delays: Mapping[str, float] | None = None,
    *,
    ignore_paths: Collection[str] = (),
) -> list[Violation]:
    """Requests to one host name that came too soon after the previous one ended.

    The required gap of a host is ``max(min_gap_s, crawl_delays.get(host, 0))``. Each request is compared with
    the latest end among the requests to its host that started before it, so overlapping requests count too.
    """
    by_host: dict[str, list[LogEntry]] = defaultdict(list)
    for e in entries:
        if e.path not in ignore_paths:
            by_host[e.host].append(e)
    delays = crawl_delays or {}
    found = []
    for host, items in by_host.items():
        required = max(min_gap_s, delays.get(host, 0.0))
        items.sort(key=lambda e: e.start_ms)
        latest = items[0]
        for e in items[1:]:
            gap = (e.start_ms - latest.end_ms) / 1000.0
            if gap < required:
                found.append(Violation(host, latest, e, gap, required))
            if e.end_ms > latest.end_ms:
                latest = e
    return sorted(found, key=lambda v: v.later.start_ms)
