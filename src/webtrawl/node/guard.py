"""The node's memory guard: above ``--max-memory`` the fetchers stop leasing until memory is back down.

What grows with the work in flight is the fetchers' bodies and the parsers' trees, so that is what the guard
measures: the resident memory of the supervisor, fetcher and parser processes (sampled with psutil by the
supervisor each tick). Redis is not counted: pausing does not shrink it (the frontier's caps bound it). Leasing
resumes below 90% of the limit, so the node does not flap at the line. In-flight fetches finish normally and
their pages are stored, which is what brings memory back down.
"""

from __future__ import annotations

import logging
import multiprocessing.synchronize
import time
from collections.abc import Mapping

from webtrawl.metrics.report import format_bytes

log = logging.getLogger("webtrawl.node")

WATCHED = ("supervisor", "fetcher", "parser")
_RESUME_AT = 0.9
_REMIND_EVERY_S = 30.0


class MemoryGuard:
    def __init__(self, limit: int, pause: multiprocessing.synchronize.Event) -> None:
        self.limit = limit
        self.pause = pause
        self.peak = 0
        self._reminded = 0.0

    def check(self, rss_by_kind: Mapping[str, int]) -> None:
        used = sum(rss_by_kind.get(kind, 0) for kind in WATCHED)
        self.peak = max(self.peak, used)
        if self.limit <= 0:
            return
        now = time.monotonic()
        if not self.pause.is_set():
            if used > self.limit:
                self.pause.set()
                self._reminded = now
                log.warning(
                    "memory %s is above --max-memory %s: leasing paused until it is below %s",
                    format_bytes(used),
                    format_bytes(self.limit),
                    format_bytes(self.limit * _RESUME_AT),
                )
        elif used < self.limit * _RESUME_AT:
            self.pause.clear()
            log.info("memory %s is below the limit again: leasing resumes", format_bytes(used))
        elif now - self._reminded >= _REMIND_EVERY_S:
            self._reminded = now
            log.warning(
                "still paused: memory %s is above --max-memory %s", format_bytes(used), format_bytes(self.limit)
            )
