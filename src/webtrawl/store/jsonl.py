"""JSONL records: one line per URL, in chunk files that are renamed when full.

Each record is encoded (msgspec) into one buffer and handed to the OS with one ``write()`` on an unbuffered
descriptor, so after ``write`` returns the line survives a crash of this process, and a kill between two
records never leaves a half line (a kill inside the system call can; :func:`seal_open_files` cuts that).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from webtrawl.store.series import Series

EXT = ".jsonl"


class JsonlWriter:
    """Writes records to ``<prefix>-<seq:05d>.jsonl``; ``chunk_records`` lines per file."""

    def __init__(self, directory: Path, prefix: str, chunk_records: int, recipients: Sequence[Any] = ()) -> None:
        self.series = Series(directory, prefix, EXT, recipients, per_file=max(1, chunk_records))
        self._encoder = msgspec.json.Encoder()

    @property
    def current_path(self) -> Path | None:
        """The ``.open`` chunk being written, if any."""
        return self.series.file.path if self.series.file is not None else None

    def write(self, record: dict[str, Any]) -> None:
        self.write_some([record])

    def write_some(self, records: Sequence[dict[str, Any]]) -> int:
        """Write the leading records that fit in the current chunk file with one ``write()``; returns how many.

        All of them reach the OS or none do (a failed write is cut back), so a caller can retry the same call;
        a page's dropped links cost one system call instead of one per line.
        """
        self.series.rotate()  # a full chunk first: the room is the next one's
        part = records[: self.series.room()]
        self.series.write(self._encoder.encode_lines(part), len(part))  # no half line in front of the next record
        return len(part)

    def flush(self) -> None:
        """Nothing is buffered in this process: every ``write`` already reached the OS."""

    def close(self) -> None:
        self.series.close()
