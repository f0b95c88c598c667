"""JSONL records: one line per URL, in chunk files that are renamed when full.

Each record is encoded (msgspec) into one buffer and handed to the OS with one ``write()`` on an unbuffered
descriptor, so after ``write`` returns the line survives a crash of this process, and a kill between two
records never leaves a half line (a kill inside the system call can; :func:`seal_open_files` cuts that).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from webtrawl.store.outfile import OutFile, open_out
from webtrawl.store.recovery import file_name, next_sequence

EXT = ".jsonl"


class JsonlWriter:
    """Writes records to ``<prefix>-<seq:05d>.jsonl``; ``chunk_records`` lines per file."""

    def __init__(self, directory: Path, prefix: str, chunk_records: int, recipients: Sequence[Any] = ()) -> None:
        self.directory = directory
        self.prefix = prefix
        self.chunk_records = max(1, chunk_records)
        directory.mkdir(parents=True, exist_ok=True)
        self._seq = next_sequence(directory, prefix, EXT)
        self._encoder = msgspec.json.Encoder()
        self._recipients = recipients
        self._file: OutFile | None = None
        self._count = 0

    @property
    def current_path(self) -> Path | None:
        """The ``.open`` chunk being written, if any."""
        return self._file.path if self._file is not None else None

    def write(self, record: dict[str, Any]) -> None:
        self.write_some([record])

    def write_some(self, records: Sequence[dict[str, Any]]) -> int:
        """Write the leading records that fit in the current chunk file with one ``write()``; returns how many.

        All of them reach the OS or none do (a failed write is cut back), so a caller can retry the same call;
        a page's dropped links cost one system call instead of one per line.
        """
        self._seal_if_full()  # a seal that failed (a full disk) is done before anything new is written
        out = self._open()
        part = records[: self.chunk_records - self._count]
        out.append(self._encoder.encode_lines(part))  # no half line in front of the next record
        self._count += len(part)
        with contextlib.suppress(OSError):  # the records are written: a failed seal is retried by the next write
            self._seal_if_full()
        return len(part)

    def _seal_if_full(self) -> None:
        if self._file is not None and (self._count >= self.chunk_records or self._file.full()):
            self._close_file()

    def flush(self) -> None:
        """Nothing is buffered in this process: every ``write`` already reached the OS."""

    def close(self) -> None:
        self._close_file()

    def _open(self) -> OutFile:
        if self._file is None:
            self._file = open_out(self.directory, file_name(self.prefix, self._seq, EXT), self._recipients)
            self._count = 0
        return self._file

    def _close_file(self) -> None:
        if self._file is None:
            return
        self._file.seal()
        self._file = None
        self._seq += 1
