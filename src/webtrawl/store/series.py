"""A rotating series of output files ``<prefix>-<seq:05d><ext>``: one open at a time, sealed when full.

The one life cycle of every file output that rotates: JSONL and WARC records, CSV and Parquet rows, an encrypted
JSON array, encrypted logs. A file is full after ``per_file`` units (records, rows: the caller counts them) or
``max_bytes``, or when an encrypted file must be sealed (it holds its plaintext in memory). Plain files are sealed
by ``sealer`` when given (a format that checks its tail first), encrypted ones by themselves
(:mod:`webtrawl.store.outfile`). Held (``hold=True``, as the parser's sinks are), a file that fills is set aside,
not sealed, until :meth:`commit`: the parser commits once the batch that filled it is completed, so a sealed file
never holds a record a rollback (:mod:`webtrawl.store.batchlog`) could take back.

A file deleted while open (its directory removed under the crawl, a clean-up job) is noticed before the next write:
one ERROR line, and the series goes on in a new file (the directory made again), so nothing written after the
deletion goes to a file nobody can read. What the file held went with it.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from webtrawl.store.batchlog import Mark
from webtrawl.store.outfile import Form, OutFile, Sealer, open_out
from webtrawl.store.recovery import file_name, next_sequence

log = logging.getLogger("webtrawl.store")


class Series:
    def __init__(
        self,
        directory: Path,
        prefix: str,
        ext: str,
        recipients: Sequence[Any] = (),
        *,
        per_file: int = 0,
        max_bytes: int = 0,
        form: Form | None = None,
        sealer: Sealer | None = None,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory, self.prefix, self.ext = directory, prefix, ext
        self.per_file, self.max_bytes = max(0, per_file), max(0, max_bytes)  # 0: no such bound
        self.seq = next_sequence(directory, prefix, ext)
        self.file: OutFile | None = None
        self.count = 0  # units written to the open file
        self.hold = False
        self._recipients, self._form, self._sealer = recipients, form, sealer
        self._full: list[OutFile] = []  # filled while held, sealed by commit

    @property
    def name(self) -> str:
        """The name (without ``.open``) of the file being written, or of the next one."""
        return file_name(self.prefix, self.seq, self.ext)

    def room(self) -> int | None:
        """Units the open (or next) file still takes; None if ``per_file`` does not bound it."""
        return self.per_file - self.count if self.per_file else None

    def open(self) -> OutFile:
        if self.file is None:
            self.directory.mkdir(parents=True, exist_ok=True)  # removed under the crawl: made again
            self.file = open_out(self.directory, self.name, self._recipients, self._form, self._sealer)
        return self.file

    def write(self, data: bytes | memoryview, units: int = 1) -> None:
        """Append ``data`` (``units`` whole units) all or nothing, to a new file if the open one is full.

        A seal that failed (a full disk) is done first, before anything new is written; one that fails after
        the write is left for the next write (the data is in). A new file whose first append fails is dropped, so
        no file is left without the header its writer puts in its first append.
        """
        self.rotate()
        fresh = self.file is None
        out = self.open()
        try:
            out.append(data)
        except BaseException:
            if fresh:
                out.discard()
                self.file = None
            raise
        self.count += units
        with contextlib.suppress(OSError):
            self.rotate()

    def rotate(self, full: bool = False) -> None:
        """Seal the open file if ``full`` (forced: a CSV's wider header) or full by its bounds; while held, set it
        aside for :meth:`commit` instead. A seal that fails raises and leaves it open, so a retry seals it."""
        out = self.file
        if out is not None and out.deleted():
            log.error(
                "%s was deleted while being written (what it held went with it); going on in a new file", out.path
            )
            out.abandon()
            self.file, self.count = None, 0
            self.seq += 1
            return
        if out is None or not (full or self._is_full(out)):
            return
        if self.hold:
            self._full.append(out)
        else:
            out.seal()
        self.file, self.count = None, 0
        self.seq += 1

    def _is_full(self, out: OutFile) -> bool:
        return (
            (self.per_file > 0 and self.count >= self.per_file)
            or (self.max_bytes > 0 and out.size >= self.max_bytes)
            or out.full()
        )

    def mark(self) -> Mark:
        """Where the series stands, for a batch log's rollback (:mod:`webtrawl.store.batchlog`)."""
        size = self.file.disk_size if self.file is not None else -1
        return Mark(str(self.directory), self.prefix, self.ext, self.seq, size)

    def commit(self) -> None:
        """Seal the files that filled while held (a seal that fails, a full disk, is retried by the next commit)."""
        while self._full:
            try:
                self._seal(self._full[0])
            except OSError:
                return
            self._full.pop(0)

    @staticmethod
    def _seal(out: OutFile) -> None:
        if out.deleted():  # nothing left to seal
            log.error("%s was deleted before it was sealed (what it held went with it)", out.path)
            out.abandon()
        else:
            out.seal()

    def close(self) -> None:
        """Seal everything, the held files and the open one (a seal that fails raises)."""
        while self._full:
            self._seal(self._full[0])
            self._full.pop(0)
        self.hold = False
        self.rotate(True)
