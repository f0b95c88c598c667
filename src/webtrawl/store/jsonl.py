"""JSONL records: one line per URL, in chunk files that are renamed when full.

Each record is encoded (msgspec) into one buffer and handed to the OS with one ``write()`` on an unbuffered
descriptor, so after ``write`` returns the line survives a crash of this process, and a kill between two
records never leaves a half line (a kill inside the system call can; :func:`seal_open_files` cuts that).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from webtrawl.store.recovery import OPEN_SUFFIX, file_name, finish, next_sequence

EXT = ".jsonl"


class JsonlWriter:
    """Writes records to ``<prefix>-<seq:05d>.jsonl``; ``chunk_records`` lines per file."""

    def __init__(self, directory: Path, prefix: str, chunk_records: int) -> None:
        self.directory = directory
        self.prefix = prefix
        self.chunk_records = max(1, chunk_records)
        directory.mkdir(parents=True, exist_ok=True)
        self._seq = next_sequence(directory, prefix, EXT)
        self._encoder = msgspec.json.Encoder()
        self._fd = -1
        self._path: Path | None = None
        self._size = 0
        self._count = 0

    @property
    def current_path(self) -> Path | None:
        """The ``.open`` chunk being written, if any."""
        return self._path

    def write(self, record: dict[str, Any]) -> None:
        self.write_some([record])

    def write_some(self, records: Sequence[dict[str, Any]]) -> int:
        """Write the leading records that fit in the current chunk file with one ``write()``; returns how many.

        All of them reach the OS or none do (a failed write is cut back), so a caller can retry the same call;
        a page's dropped links cost one system call instead of one per line.
        """
        fd = self._open()
        part = records[: self.chunk_records - self._count]
        data = self._encoder.encode_lines(part)
        done = 0
        try:
            while done < len(data):  # a regular file takes it in one call unless the disk is full
                done += os.write(fd, data[done:] if done else data)
        except BaseException:
            os.ftruncate(fd, self._size)  # no half line in front of the next record
            raise
        self._size += len(data)
        self._count += len(part)
        if self._count >= self.chunk_records:
            self._close_file()
        return len(part)

    def flush(self) -> None:
        """Nothing is buffered in this process: every ``write`` already reached the OS."""

    def close(self) -> None:
        self._close_file()

    def _open(self) -> int:
        if self._fd < 0:
            path = self.directory / (file_name(self.prefix, self._seq, EXT) + OPEN_SUFFIX)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            self._path = path
            self._size = self._count = 0
        return self._fd

    def _close_file(self) -> None:
        if self._fd < 0 or self._path is None:
            return
        fd, path = self._fd, self._path
        self._fd, self._path = -1, None
        os.fsync(fd)
        os.close(fd)
        finish(path)
        self._seq += 1
