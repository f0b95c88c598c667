"""What the test web served in a bench window, from its access log, in the terms of issue 21's real-web figures.

The issue describes the real web a 60 s crawl met: requests, the robots.txt share, how often a new host comes up,
bytes, body sizes, the share of 12 MB bodies and gzip bombs, hosts with a big robots.txt, the HTTPS share. A bench
that is to cost what the real web costs has to serve that mix, so each run measures it here, scaled to 60 s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from webtrawl_testweb.accesslog import ROBOTS_PATHS, LogEntry

# Per 60 s of crawling, as issue 21 gives them for the offline copy of the real web: (low, high) or a point value.
REAL_WEB: dict[str, tuple[float, float]] = {
    "requests": (18_000, 19_000),
    "robots_per_request": (0.23, 0.23),
    "new_hosts_per_request": (1 / 4.5, 1 / 4.5),
    "hosts": (3_800, 4_100),
    "mbytes": (2_500, 2_800),
    "kb_per_request": (2_500_000 / 19_000, 2_800_000 / 18_000),
    "body_mean_kb": (185, 185),
    "body_p90_kb": (300, 300),
    "huge_per_page": (0.01, 0.01),
    "bomb_per_page": (0.01, 0.01),
    "big_robots_per_host": (0.05, 0.05),
    "https_per_request": (0.80, 0.80),
}


@dataclass(frozen=True, slots=True)
class WebMix:
    """The mix of one window, counts scaled to 60 s (``requests``, ``hosts``, ``mbytes``), shares as fractions.

    ``body_mean_kb`` and ``body_p90_kb`` are those of the ordinary pages (the corpus pages: no 12 MB body, bomb
    or PDF), decoded; ``kb_per_request`` counts every byte sent, robots.txt files and the big bodies included."""

    seconds: float
    requests: float
    robots_per_request: float
    new_hosts_per_request: float
    hosts: float
    mbytes: float
    kb_per_request: float
    body_mean_kb: float
    body_p90_kb: float
    huge_per_page: float
    bomb_per_page: float
    big_robots_per_host: float
    https_per_request: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _p90(values: list[int]) -> float:
    if not values:
        return math.nan
    values.sort()
    return float(values[min(len(values) - 1, int(0.9 * len(values)))])


def measure(entries: Iterable[LogEntry], run_start_ms: float, window: tuple[float, float]) -> WebMix:
    """The mix of the requests that started within ``window`` (wall-clock ms); a host is *new* when the run's first
    request to it (since ``run_start_ms``) is in the window. ``hosts`` (touched in the window) is scaled like the
    requests: in a broad crawl most hosts a minute touches are new ones, met once."""
    w0, w1 = window
    first: dict[str, float] = {}
    requests = robots = https = nbytes = huge = bombs = 0
    hosts: set[str] = set()
    robots_hosts: set[str] = set()
    big_hosts: set[str] = set()
    bodies: list[int] = []
    for e in entries:
        if e.start_ms < run_start_ms or not e.kind or e.kind == "stats":
            continue
        if e.host not in first or e.start_ms < first[e.host]:
            first[e.host] = e.start_ms
        if not w0 <= e.start_ms < w1:
            continue
        requests += 1
        hosts.add(e.host)
        https += e.scheme == "https"
        nbytes += e.nbytes
        if e.path in ROBOTS_PATHS:
            robots += 1
            robots_hosts.add(e.host)
            if e.kind == "robots-big":
                big_hosts.add(e.host)
            continue
        huge += e.kind == "fault-huge"
        bombs += e.kind == "fault-bomb"
        if e.kind == "page":
            bodies.append(e.decoded or e.nbytes)
    new = sum(w0 <= t < w1 for t in first.values())
    scale = 60_000.0 / (w1 - w0)
    pages = max(1, requests - robots)
    return WebMix(
        seconds=(w1 - w0) / 1000.0,
        requests=requests * scale,
        robots_per_request=robots / max(1, requests),
        new_hosts_per_request=new / max(1, requests),
        hosts=len(hosts) * scale,
        mbytes=nbytes * scale / 1e6,
        kb_per_request=nbytes / max(1, requests) / 1e3,
        body_mean_kb=sum(bodies) / len(bodies) / 1e3 if bodies else math.nan,
        body_p90_kb=_p90(bodies) / 1e3,
        huge_per_page=huge / pages,
        bomb_per_page=bombs / pages,
        big_robots_per_host=len(big_hosts) / max(1, len(robots_hosts)),
        https_per_request=https / max(1, requests),
    )


def connections_opened(entries: Iterable[LogEntry], run_start_ms: float, window: tuple[float, float]) -> int:
    """Connections to the test web whose first request (since ``run_start_ms``) started within ``window``: a
    connection is its server port and the client's source port. One that carried no request is not counted, and
    a source port the kernel gives out again to the same server port within the run counts once (rare: a run
    opens far fewer connections than the ephemeral port range holds)."""
    w0, w1 = window
    first: dict[tuple[int, int], float] = {}
    for e in entries:
        if e.start_ms < run_start_ms or not e.client_port or e.kind == "stats":  # stats: the bench's own requests
            continue
        key = (e.port, e.client_port)
        if key not in first or e.start_ms < first[key]:
            first[key] = e.start_ms
    return sum(w0 <= t < w1 for t in first.values())


def describe(mix: WebMix) -> str:
    """One line of the printout, each figure next to the real web's."""
    parts = []
    for name, value in mix.as_dict().items():
        if name == "seconds":
            continue
        lo, hi = REAL_WEB[name]
        real = f"{lo:g}" if lo == hi else f"{lo:g}-{hi:g}"
        shown = f"{value:.3f}" if value < 10 else f"{value:,.0f}"
        parts.append(f"{name} {shown} (real {real})")
    return "  served per 60 s: " + ", ".join(parts)
