"""Snapshots of a running crawl and per-second rates over a sliding window.

The frontier only keeps totals (cheap, crash-safe); rates are derived here from two snapshots, so every
process that can read the counters (supervisor, ``trawl stats``, the exporter) computes them the same way.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import psutil  # type: ignore[import-untyped]

from webtrawl.frontier.base import Counters
from webtrawl.metrics.progress import Progress


@dataclass(slots=True)
class Snapshot:
    """Everything the progress display and the exporter show, taken at one instant."""

    at: float  # time.monotonic() seconds
    counters: Counters
    rss_by_kind: dict[str, int] = field(default_factory=dict)  # bytes per kind ("fetcher", "redis"...)
    redis_used_memory: int = 0  # bytes, Redis INFO used_memory
    redis_full: bool = False  # Redis is at its maxmemory (refuses writes that need memory)
    redis_max_memory: int = 0  # its maxmemory (a cluster: all masters'), 0: none
    extra: dict[str, Any] = field(default_factory=dict)  # node id, elapsed seconds, state ("crawling"...)
    processes: dict[str, dict[str, float]] = field(default_factory=dict)  # kind -> rss, cpu (%), count
    progress: Progress | None = None  # set by the node before the snapshot is shown


class RateWindow:
    """Per-second rates of counters over the last ``window_s`` seconds.

    Memory is bounded twice: samples older than the window are dropped, and kept samples are at least
    ``window_s / max_samples`` apart (a faster caller moves the newest sample forward instead of adding one),
    so at most ``max_samples + 2`` are kept however often :meth:`add` is called.
    """

    def __init__(self, window_s: float = 60.0, max_samples: int = 120) -> None:
        if window_s <= 0:
            raise ValueError(f"window_s must be > 0, not {window_s}")
        if max_samples < 2:
            raise ValueError(f"max_samples must be >= 2, not {max_samples}")
        self.window_s = window_s
        self._min_gap = window_s / max_samples
        self._samples: deque[tuple[float, Mapping[str, int]]] = deque()

    def add(self, snapshot: Snapshot) -> None:
        at, values = snapshot.at, dict(snapshot.counters.values)
        samples = self._samples
        if samples and at < samples[-1][0]:
            samples.clear()  # the clock went back (another process's snapshot): old rates mean nothing
        if len(samples) >= 2 and samples[-1][0] - samples[-2][0] < self._min_gap:
            samples[-1] = (at, values)  # the newest sample is not settled yet: move it forward
        else:
            samples.append((at, values))
        # keep two samples even if both are old: a rate over a longer span beats no rate at all
        while len(samples) > 2 and samples[0][0] < at - self.window_s:
            samples.popleft()

    def rate(self, name: str) -> float:
        """Change per second of counter ``name`` from the oldest kept sample to the newest (0.0 if unknown).

        Gauges such as ``queued`` give a negative rate while they shrink.
        """
        if len(self._samples) < 2:
            return 0.0
        (t0, v0), (t1, v1) = self._samples[0], self._samples[-1]
        if t1 <= t0:
            return 0.0
        return (v1.get(name, 0) - v0.get(name, 0)) / (t1 - t0)

    @property
    def span_s(self) -> float:
        """Seconds between the oldest and the newest kept sample: how much history the rates rest on."""
        if len(self._samples) < 2:
            return 0.0
        return self._samples[-1][0] - self._samples[0][0]

    def __len__(self) -> int:
        return len(self._samples)


def process_memory(pids_by_kind: Mapping[str, Iterable[int]]) -> dict[str, int]:
    """Resident memory in bytes summed per process kind; a process that died meanwhile counts as 0."""
    result: dict[str, int] = {}
    for kind, pids in pids_by_kind.items():
        total = 0
        for pid in pids:
            try:
                total += int(psutil.Process(pid).memory_info().rss)
            except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
                continue
        result[kind] = total
    return result
