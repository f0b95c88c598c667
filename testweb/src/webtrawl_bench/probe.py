"""A fixed piece of Python work timed in the bench's own process: how fast the machine ran Python in a window.

A shared machine's speed drifts from minute to minute: one window's ms/page can be 15-25% over another's for the
same work per page (RESULTS.md, 2026-12-03 18:18). The bench times this probe at every poll of the window (~0.4 ms of
its own CPU every 0.5 s), and its median says whether a dear window ran on a slower machine. It is timed in thread
CPU time, so a probe that the scheduler pauses is not charged for the pause; what it does see is the core's speed
and the caches the node's processes share with it.
"""

from __future__ import annotations

import statistics
import time

_KEYS = [f"host{i}.example/path/{i}" for i in range(64)]
_ROUNDS = 3000


def probe_us() -> float:
    """Microseconds of this thread's CPU for one probe: dict updates, string slicing and small allocations, the
    interpreter work a crawler's Python mostly is."""
    start = time.thread_time_ns()
    table: dict[str, int] = {}
    parts: list[str] = []
    for i in range(_ROUNDS):
        key = _KEYS[i & 63]
        table[key] = table.get(key, 0) + i
        parts.append(key[: 4 + (i & 7)].upper())
    "".join(parts).count("HOST")
    return (time.thread_time_ns() - start) / 1000.0


def median_us(samples: list[float]) -> float:
    """The window's probe: the median, robust to a probe cut by an interrupt. NaN if there was none."""
    return statistics.median(samples) if samples else float("nan")
