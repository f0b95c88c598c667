"""Per-process CPU and memory by kind (supervisor, fetcher, parser, redis), and the bytes a node wrote to disk.

CPU needs the same :class:`psutil.Process` object between two samples (psutil measures since its previous call), so
the sampler keeps one per pid and forgets pids that are gone.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import psutil  # type: ignore[import-untyped]

OUTPUT_DIRS = ("warc", "records", "dropped")


class ProcessSampler:
    """``sample({"fetcher": [pids]...})`` -> ``{kind: {"rss": bytes, "cpu": percent of one core, "count": n}}``."""

    def __init__(self) -> None:
        self._procs: dict[int, psutil.Process] = {}

    def sample(self, pids_by_kind: Mapping[str, Iterable[int]]) -> dict[str, dict[str, float]]:
        result: dict[str, dict[str, float]] = {}
        alive: set[int] = set()
        for kind, pids in pids_by_kind.items():
            row = {"rss": 0.0, "cpu": 0.0, "count": 0.0}
            for pid in pids:
                proc = self._procs.get(pid)
                try:
                    if proc is None:
                        proc = self._procs[pid] = psutil.Process(pid)
                        proc.cpu_percent(None)  # the first call only starts the measurement
                    with proc.oneshot():
                        row["rss"] += proc.memory_info().rss
                        row["cpu"] += proc.cpu_percent(None)
                    row["count"] += 1
                    alive.add(pid)
                except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
                    continue
            result[kind] = row
        for pid in set(self._procs) - alive:
            del self._procs[pid]
        return result


def output_bytes(out: Path) -> int:
    """Bytes of the node's output files (WARC, JSONL records, dropped links), open chunks included."""
    total = 0
    for name in OUTPUT_DIRS:
        try:
            with os.scandir(out / name) as entries:
                for entry in entries:
                    try:
                        if entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total
