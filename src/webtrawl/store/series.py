"""A rotating series of output files ``<prefix>-<seq:05d><ext>``: one open at a time, sealed when full.

Shared by the JSONL and WARC writers. Held (``hold=True``, as the parser's sinks are), a file that fills is set
aside, not sealed, until :meth:`commit`: the parser commits once the batch that filled it is completed, so a sealed
file never holds a record a rollback (:mod:`webtrawl.store.batchlog`) could take back.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from webtrawl.store.batchlog import Mark
from webtrawl.store.outfile import OutFile, open_out
from webtrawl.store.recovery import file_name, next_sequence


class Series:
    def __init__(self, directory: Path, prefix: str, ext: str, recipients: Sequence[Any] = ()) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory, self.prefix, self.ext = directory, prefix, ext
        self.seq = next_sequence(directory, prefix, ext)
        self.file: OutFile | None = None
        self.hold = False
        self._recipients = recipients
        self._full: list[OutFile] = []  # filled while held, sealed by commit

    @property
    def name(self) -> str:
        """The name (without ``.open``) of the file being written, or of the next one."""
        return file_name(self.prefix, self.seq, self.ext)

    def open(self) -> OutFile:
        if self.file is None:
            self.file = open_out(self.directory, self.name, self._recipients)
        return self.file

    def rotate(self, full: bool) -> None:
        """Seal the open file if ``full`` (the writer's own measure) or full as a file (encrypted files hold their
        plaintext in memory); while held, set it aside for :meth:`commit` instead."""
        if self.file is None or not (full or self.file.full()):
            return
        if self.hold:
            self._full.append(self.file)
        else:
            self.file.seal()  # kept open if this fails, so a retry seals it
        self.file = None
        self.seq += 1

    def mark(self) -> Mark:
        size = self.file.disk_size if self.file is not None else -1
        return Mark(str(self.directory), self.prefix, self.ext, self.seq, size)

    def commit(self) -> None:
        """Seal the files that filled while held (a seal that fails, a full disk, is retried by the next commit)."""
        while self._full:
            try:
                self._full[0].seal()
            except OSError:
                return
            self._full.pop(0)

    def close(self) -> None:
        while self._full:
            self._full.pop(0).seal()
        if self.file is not None:
            self.file.seal()
            self.file = None
            self.seq += 1

    def discard_fresh(self) -> None:
        """Drop the open file after its first append failed (no file without its header record)."""
        if self.file is not None:
            self.file.discard()
            self.file = None
