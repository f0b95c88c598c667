"""Progress a person reads: how far along the crawl is, when it will end, how much of it works.

Three bases for a percentage, strongest first:

- ``max-pages``: fetched pages of this crawl against ``--max-pages`` (it counts the whole crawl's fetches);
- ``max-time``: this run's elapsed time against ``--max-time``;
- ``frontier``: fetched against fetched + queued + in flight. Without a limit this is what a bounded crawl (a scope,
  a depth or a budget that ends it) has left *as far as it knows now*: links not discovered yet are not counted,
  so early in a crawl the percentage runs ahead and the ETA is a lower bound. Shown as such (``basis``).

When both limits are set, the one that will be reached first by the current rate is used. A limit wins over the
frontier even when the frontier looks smaller: early in a crawl it is, and it grows. The ETA divides what is left by
the fetch rate over the rate window; no rate, no ETA. But URLs left and no host ready is a crawl that waits, and
``waiting`` says for what instead (``waiting: 12 hosts in back-off, next retry in 4m10s``): hosts backed off after
failures, hosts whose robots.txt is retried, hosts on their politeness delay, each with when the first is due.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from webtrawl.frontier.base import Counters
from webtrawl.metrics.report import ERR_PREFIX


@dataclass(frozen=True, slots=True)
class Progress:
    fraction: float | None  # 0..1, None when nothing tells how much is left
    eta_s: float | None  # seconds until done at the current rate; None when unknown
    basis: str  # "max-pages", "max-time", "frontier" or "" (nothing known yet)
    success_rate: float | None  # share of finished URLs without an error; None before the first
    bytes_written: int  # output files on disk (WARC, records, dropped): what this node wrote
    bytes_downloaded: int = 0  # response bodies as received (the records' ``bytes``)
    done: float = 0.0  # how much of ``total`` is done, in the basis's unit (pages or seconds)
    total: float = 0.0
    waiting: str = ""  # what a crawl with URLs left and no host ready waits for ("" when it is not waiting)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def percent_text(self) -> str:
        return "-" if self.fraction is None else f"{self.fraction * 100:.1f}%"

    @property
    def eta_text(self) -> str:
        from webtrawl.metrics.report import format_duration

        if self.eta_s is None:
            return self.waiting or "-"
        return format_duration(self.eta_s)


def waiting_for(counters: Counters, fetch_rate: float) -> str:
    """What the crawl waits for when no page is being fetched, URLs are left and no host is ready now; else ""."""
    from webtrawl.metrics.report import format_duration

    if fetch_rate > 0 or counters.queued <= 0 or counters.ready_hosts > 0:
        return ""
    parts = []
    if counters.backoff_hosts > 0:
        parts.append(f"{_hosts(counters.backoff_hosts)} in back-off" + _next(counters.backoff_next_ms, "retry"))
    if counters.robots_hosts > 0:
        parts.append(f"{_hosts(counters.robots_hosts)} retrying robots.txt" + _next(counters.robots_next_ms, "try"))
    polite = counters.waiting_hosts - counters.backoff_hosts - counters.robots_hosts
    if polite > 0:
        parts.append(f"{_hosts(polite)} on their politeness delay")
    if not parts:
        return ""
    text = "waiting: " + "; ".join(parts)
    if counters.next_due_ms >= 0 and polite > 0:
        text += f", next host due in {format_duration(counters.next_due_ms / 1000)}"
    return text


def _hosts(n: int) -> str:
    return f"{n} host" if n == 1 else f"{n} hosts"


def _next(ms: int, what: str) -> str:
    from webtrawl.metrics.report import format_duration

    return f", next {what} in {format_duration(ms / 1000)}" if ms >= 0 else ""


def errors_total(counters: Counters) -> int:
    return sum(v for k, v in counters.values.items() if k.startswith(ERR_PREFIX))


def success_rate(counters: Counters) -> float | None:
    """URLs that ended without an error over all that ended (every ended URL is one stored record)."""
    ended = counters.get("stored")
    if ended <= 0:
        return None
    return max(0.0, min(1.0, 1.0 - errors_total(counters) / ended))


def _eta(left: float, rate: float) -> float | None:
    if left <= 0:
        return 0.0
    if rate <= 0 or not math.isfinite(rate):
        return None
    return left / rate


def compute(
    counters: Counters,
    fetch_rate: float,
    *,
    elapsed_s: float = 0.0,
    max_pages: int = 0,
    max_time: float = 0.0,
    bytes_written: int = 0,
    pages_done: int | None = None,
    bytes_downloaded: int = 0,
) -> Progress:
    """The crawl's progress from its counters and its fetch rate (pages/s) over the rate window.

    ``pages_done``: what ``--max-pages`` has used up, as the node counts it for its stop (default: fetched)."""
    fetched = counters.get("fetched")
    used = fetched if pages_done is None else pages_done
    # (fraction, eta, basis, done, total)
    candidates: list[tuple[float, float | None, str, float, float]] = []
    if max_pages > 0:
        left = max(0, max_pages - used)
        candidates.append((min(1.0, used / max_pages), _eta(left, fetch_rate), "max-pages", used, max_pages))
    if max_time > 0:
        left_s = max(0.0, max_time - elapsed_s)
        candidates.append((min(1.0, elapsed_s / max_time), left_s, "max-time", min(elapsed_s, max_time), max_time))
    if candidates:
        # the limit reached first ends the crawl: the smallest known ETA (or the largest fraction without one)
        timed = [c for c in candidates if c[1] is not None]
        fraction, eta, basis, done, total = min(timed, key=lambda c: c[1] or 0.0) if timed else max(candidates)
        rate = success_rate(counters)
        waiting = waiting_for(counters, fetch_rate)
        return Progress(fraction, eta, basis, rate, bytes_written, bytes_downloaded, done, total, waiting)
    if counters.get("added"):
        left_urls = counters.queued + counters.inflight
        total_urls = fetched + left_urls
        fraction = fetched / total_urls if total_urls else 1.0
        eta = _eta(left_urls, fetch_rate)
        rate = success_rate(counters)
        waiting = waiting_for(counters, fetch_rate)
        return Progress(fraction, eta, "frontier", rate, bytes_written, bytes_downloaded, fetched, total_urls, waiting)
    return Progress(None, None, "", success_rate(counters), bytes_written, bytes_downloaded)
