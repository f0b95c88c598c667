"""A process's log file encrypted to the crawl's age recipients (``--encrypt-to``): log lines name URLs.

The file is a :class:`~webtrawl.store.series.Series` of age files ``<name>-NNNNN.log.age`` (each one an age file
``age -d`` reads, rotated at ``--log-max-bytes``, ``--log-backups`` old ones kept). Every append of an open
encrypted file is a whole age file of its own, so lines are gathered first: a WARNING or worse is written at once
(with the lines before it), other lines when 64 KiB have gathered, when a line comes a second or more after the
first one waiting, and at exit. A kill -9 loses the INFO lines still waiting; what was written survives it in the
file's journal, each append sealed on its own when the process starts again
(:func:`~webtrawl.store.recovery.recover_journals`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from webtrawl.node.logs import QuietWhenFull
from webtrawl.store.recovery import AGE, recover_journals
from webtrawl.store.series import Series

EXT = ".log"
SUPERVISOR = "trawl"
_GATHER_BYTES = 64 * 1024
_GATHER_SECONDS = 1.0


class AgeLogHandler(QuietWhenFull):
    def __init__(self, directory: Path, name: str, recipients: Sequence[Any], max_bytes: int, backups: int) -> None:
        super().__init__()
        directory.mkdir(parents=True, exist_ok=True)
        # This process's predecessor, killed; the supervisor (``trawl``), which starts before any child, also seals
        # what children that will not run again (a resume with fewer processes) left.
        recover_journals(directory, "" if name == SUPERVISOR else name)
        self.backups = backups
        self._series = Series(directory, name, EXT, list(recipients), max_bytes=max(1, max_bytes))
        self._pending: list[str] = []
        self._pending_bytes = 0
        self._first = 0.0
        self._guard = threading.RLock()  # emit (under the handler's lock) and flush from logging.shutdown

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + "\n"
            with self._guard:
                if not self._pending:
                    self._first = time.monotonic()
                self._pending.append(line)
                self._pending_bytes += len(line)
                due = time.monotonic() - self._first >= _GATHER_SECONDS or self._pending_bytes >= _GATHER_BYTES
            if record.levelno >= logging.WARNING or due:
                self.flush()
        except Exception:
            self.handleError(record)

    def flush(self) -> None:
        with self._guard:
            if not self._pending:
                return
            data = "".join(self._pending).encode("utf-8", "replace")
            self._pending, self._pending_bytes = [], 0
            sealed = self._series.seq
            self._series.write(data)
            if self._series.seq != sealed:
                self._prune()

    def close(self) -> None:
        self.flush()
        with self._guard:
            self._series.close()
            self._prune()
        super().close()

    def _prune(self) -> None:
        series = self._series
        sealed = sorted(series.directory.glob(f"{series.prefix}-*{EXT}{AGE}"))
        for old in sealed[: max(0, len(sealed) - self.backups - 1)]:  # as many as the plain files: backups + current
            old.unlink(missing_ok=True)
