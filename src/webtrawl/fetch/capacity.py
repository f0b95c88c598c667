"""How many requests a fetcher keeps in flight: ``--concurrency``, raised toward ``--max-concurrency`` while the CPUs
it runs on have idle time and every slot is in use, lowered back when they have none.

A crawl of the real web mostly waits for round trips: at 128 requests per fetcher a 2-core node left about a quarter
of its CPU idle, and twice the requests in flight fetched +30% pages/s at +2-3% CPU per page under the realistic
web's latency; on a crawl the CPU already bounds, the same doubling cost +15% CPU per page for fewer pages/s
(benchmarks/RESULTS.md). So the slots grow only while the CPU has room for what they bring, as Crawlee's
AutoscaledPool scales its concurrency by the system's load.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from webtrawl.config import FetchOptions

__all__ = ["Capacity", "CpuIdle", "ceiling"]

log = logging.getLogger(__name__)

TICK_S = 2.0  # between two looks at the CPUs: a step's effect on pages/s shows within a second or two
RAISE_IDLE = 0.15  # share of the CPUs idle over a tick that lets the slots grow (with every slot in use)
LOWER_IDLE = 0.05  # under this the slots go back toward --concurrency
_STEPS = 8  # a step is 1/8 of --concurrency: the ceiling (twice it by default) is reached in 8 ticks
_PROC_STAT = Path("/proc/stat")
_CGROUP = Path("/sys/fs/cgroup")  # cgroup v2: a container's CPU quota (cpu.max) and use (cpu.stat)


def ceiling(fetch: FetchOptions) -> int:
    """The most requests a fetcher may have in flight (0: twice --concurrency; never under it)."""
    return max(fetch.concurrency, fetch.max_concurrency or 2 * fetch.concurrency)


def machine_times(stat: str) -> tuple[float, float]:
    """(idle, total) jiffies of all CPUs from /proc/stat's first line; iowait is idle, steal is not."""
    fields = [float(x) for x in stat.split("\n", 1)[0].split()[1:9]]
    return fields[3] + fields[4], sum(fields)


def cgroup_cpus(cpu_max: str) -> float | None:
    """The CPUs a cgroup v2 quota allows (``cpu.max``: "QUOTA PERIOD", or "max PERIOD" for none)."""
    quota, _, period = cpu_max.strip().partition(" ")
    return None if quota == "max" or not period else float(quota) / float(period)


def cgroup_usage_s(cpu_stat: str) -> float:
    """CPU seconds the cgroup used (``cpu.stat``'s usage_usec)."""
    return next(float(line.split()[1]) / 1e6 for line in cpu_stat.splitlines() if line.startswith("usage_usec "))


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


class CpuIdle:
    """The idle share of the CPUs this process may use since the last call: the machine's, or less where a
    container's quota (cgroup v2) leaves less. None where neither can be read (not Linux)."""

    def __init__(self, root: Path = _CGROUP, stat: Path = _PROC_STAT, clock: Callable[[], float] = time.monotonic):
        self._stat, self._clock = stat, clock
        self._cpu_max, self._cpu_stat = root / "cpu.max", root / "cpu.stat"
        self._last = self._sample()

    def _sample(self) -> tuple[tuple[float, float] | None, float | None, float]:
        stat = _read(self._stat)
        usage = _read(self._cpu_stat)
        return (machine_times(stat) if stat else None), (cgroup_usage_s(usage) if usage else None), self._clock()

    def __call__(self) -> float | None:
        (machine, usage, at), last = self._sample(), self._last
        self._last = machine, usage, at
        shares = []
        if machine is not None and last[0] is not None and machine[1] > last[0][1]:
            shares.append((machine[0] - last[0][0]) / (machine[1] - last[0][1]))
        cpu_max = _read(self._cpu_max)
        cpus = cgroup_cpus(cpu_max) if cpu_max else None
        if cpus and usage is not None and last[1] is not None and at > last[2]:
            shares.append(1.0 - (usage - last[1]) / ((at - last[2]) * cpus))
        return max(0.0, min(shares)) if shares else None


class Capacity:
    """The fetcher's slots (:meth:`current`); its lease loop says when it found all of them in use (:meth:`full`)."""

    def __init__(
        self,
        floor: int,
        top: int,
        idle: Callable[[], float | None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.floor, self.top, self.value = floor, max(floor, top), floor
        self._step = max(1, floor // _STEPS)
        self._idle = idle if idle is not None or self.top == floor else CpuIdle()
        self._clock = clock
        self._next = clock() + TICK_S
        self._full = False

    def full(self) -> None:
        self._full = True

    def current(self) -> int:
        if self._idle is not None and self._clock() >= self._next:
            self._next = self._clock() + TICK_S
            self._adjust(self._idle())
        return self.value

    def _adjust(self, idle: float | None) -> None:
        full, self._full = self._full, False
        before = self.value
        if idle is None:
            return
        if idle >= RAISE_IDLE and full:
            self.value = min(self.top, self.value + self._step)
        elif idle < LOWER_IDLE:
            self.value = max(self.floor, self.value - self._step)
        if self.value != before:  # the ceiling said once it is reached, the steps only for --log-level debug
            level = logging.INFO if self.value == self.top else logging.DEBUG
            log.log(level, "requests in flight: %d -> %d (CPUs %.0f%% idle)", before, self.value, 100 * idle)
