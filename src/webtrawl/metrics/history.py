"""The dashboard's time series: one point a second at most, the last ``capacity`` of them (15 minutes by default).

Rates are per second between two consecutive points, so the plot shows what happened in that second (the panel's
60 s window smooths too much to see a burst of errors). Kept as parallel columns: that is the shape uPlot draws.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

from webtrawl.frontier.base import Counters
from webtrawl.metrics.progress import errors_total

SERIES = ("pages_s", "errors_s", "queued", "inflight", "ready", "waiting")


class History:
    def __init__(self, capacity: int = 900, min_gap_s: float = 1.0) -> None:
        self.capacity = capacity
        self.min_gap_s = min_gap_s
        self._t: deque[float] = deque(maxlen=capacity)
        self._cols: dict[str, deque[float]] = {name: deque(maxlen=capacity) for name in SERIES}
        self._last: tuple[float, int, int] | None = None  # (monotonic, fetched, errors) of the newest point

    def add(self, counters: Counters, at: float | None = None, wall: float | None = None) -> bool:
        """Add a point unless the newest is younger than ``min_gap_s``; returns whether one was added."""
        at = time.monotonic() if at is None else at
        fetched, errors = counters.get("fetched"), errors_total(counters)
        last = self._last
        if last is not None and at - last[0] < self.min_gap_s:
            return False
        span = at - last[0] if last is not None else 0.0
        pages_s = max(0.0, (fetched - last[1]) / span) if last is not None and span > 0 else 0.0
        errors_s = max(0.0, (errors - last[2]) / span) if last is not None and span > 0 else 0.0
        self._last = (at, fetched, errors)
        self._t.append(round(time.time() if wall is None else wall, 3))
        row = {
            "pages_s": round(pages_s, 3),
            "errors_s": round(errors_s, 3),
            "queued": counters.queued,
            "inflight": counters.inflight,
            "ready": counters.ready_hosts,
            "waiting": counters.waiting_hosts,
        }
        for name in SERIES:
            self._cols[name].append(float(row[name]))
        return True

    def as_dict(self) -> dict[str, Any]:
        return {"t": list(self._t), **{name: list(col) for name, col in self._cols.items()}}

    def __len__(self) -> int:
        return len(self._t)
