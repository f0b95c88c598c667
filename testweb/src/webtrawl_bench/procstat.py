"""CPU seconds and peak resident memory of a crawl's processes, grouped by kind.

Kinds: ``supervisor`` (the ``trawl crawl`` process), ``fetcher``/``parser`` (named in the node's
``children.json``), ``redis``, ``other`` (e.g. multiprocessing's resource tracker) and ``testweb``, which is
reported but never added to the crawler's total. CPU is user + system time from ``/proc`` (psutil), so a
process's cost is what the kernel charged it, not a share of wall time.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import psutil  # type: ignore[import-untyped]

NODE_KINDS = ("fetcher", "parser", "supervisor", "redis", "other")


@dataclass
class CpuSample:
    """CPU seconds per pid (and its kind) at one moment."""

    cpu: dict[int, float] = field(default_factory=dict)
    kind: dict[int, str] = field(default_factory=dict)


NODE_TOTAL = "node (sum)"
# The same sum of proportional set sizes: a page shared by n processes (libpython, the supervisor's pages in a fork
# that has not yet exec'd) counts 1/n in each, so this is the memory the node holds, each page once.
NODE_PSS = "node (PSS sum)"


def _pss(pid: int, rss: int) -> int:
    """Proportional set size from ``smaps_rollup`` (Linux 4.14+), else the RSS."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss


@dataclass
class ProcessWatch:
    """Finds the processes of one crawl and samples them; ``poll()`` often keeps the RSS peaks."""

    supervisor: int
    out_dir: Path
    redis_pid: int | None
    testweb_pids: Iterable[int] = ()
    peak_rss: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    _procs: dict[int, psutil.Process] = field(default_factory=dict)

    def _kinds(self) -> dict[int, str]:
        kinds: dict[int, str] = {self.supervisor: "supervisor"}
        if self.redis_pid is not None:
            kinds[self.redis_pid] = "redis"
        for pid in self.testweb_pids:
            kinds[pid] = "testweb"
        try:
            names = json.loads((self.out_dir / "children.json").read_text())
        except (OSError, ValueError):
            names = {}
        named = {int(pid): str(name).split("-")[0] for name, pid in names.items() if pid}
        try:
            for child in psutil.Process(self.supervisor).children(recursive=True):
                kinds.setdefault(child.pid, named.get(child.pid, "redis" if "redis" in child.name() else "other"))
        except psutil.Error:
            pass
        return kinds

    def sample(self) -> CpuSample:
        out = CpuSample()
        node_rss = node_pss = 0  # all of the node's processes at one moment: what the machine must hold at once
        for pid, kind in self._kinds().items():
            proc = self._procs.get(pid)
            try:
                if proc is None:
                    proc = self._procs[pid] = psutil.Process(pid)
                times = proc.cpu_times()
                rss = int(proc.memory_info().rss)
            except psutil.Error:
                continue
            out.cpu[pid] = float(times.user + times.system)
            if kind == "redis":  # its AOF rewrites run in children it forks and reaps: the node's CPU too
                out.cpu[pid] += float(times.children_user + times.children_system)
            out.kind[pid] = kind
            self.peak_rss[kind] = max(self.peak_rss[kind], rss)
            if kind != "testweb":
                node_rss += rss
                node_pss += _pss(pid, rss)
        self.peak_rss[NODE_TOTAL] = max(self.peak_rss[NODE_TOTAL], node_rss)
        self.peak_rss[NODE_PSS] = max(self.peak_rss[NODE_PSS], node_pss)
        return out

    def poll(self) -> None:
        """Keep the RSS peaks. (Connections are counted from the test web's access log, not here: psutil's
        ``net_connections`` reads all of ``/proc/net/tcp``, CPU taken from the cores the node is measured on.)"""
        self.sample()


def cpu_by_kind(before: CpuSample, after: CpuSample) -> dict[str, float]:
    """CPU seconds spent per kind between two samples (processes present in both)."""
    spent: dict[str, float] = defaultdict(float)
    for pid, cpu in after.cpu.items():
        if pid in before.cpu:
            spent[after.kind[pid]] += max(0.0, cpu - before.cpu[pid])
    return dict(spent)


def count_by_kind(sample: CpuSample) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for kind in sample.kind.values():
        counts[kind] += 1
    return dict(counts)
