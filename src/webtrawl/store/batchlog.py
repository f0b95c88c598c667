"""A parser's batch log: what makes the file outputs hold each page once across a kill -9 of the parser or the node.

Without it a page written to the files but not yet completed in the frontier when the process died was fetched and
written again: two records. The log, one small file per parser (``<out>/batches/<prefix>.log``), holds at most the
batch in progress, in two entries:

1. ``Begin`` (before anything of the batch is written): where each file output stood, as :class:`Mark`\\ s.
2. ``Ready`` (every output written, links added): what is left to do, as the caller's bytes (the completions).

and is emptied once the batch is completed. A later life of the same parser (or the node's start) reads it back:
a batch that had begun but was not ready is **rolled back** (each file cut back to its mark, files opened since
removed: the URLs are still leased and will be fetched and written again, once); a ready batch is **rolled
forward** by the caller (completing what a kill may have left leased; completing twice is a no-op). Writers seal a
file that fills during a batch only after the batch is completed (``commit``), so a rollback never touches a sealed
file. Entries are framed with their length and CRC-32: a torn last entry (a kill inside its write) counts as absent.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import msgspec

from webtrawl.store.recovery import AGE, OPEN_SUFFIX, append_whole

log = logging.getLogger("webtrawl.store")

DIRECTORY = "batches"  # under the output directory
_FRAME = struct.Struct(">II")  # length, CRC-32


class Mark(msgspec.Struct, frozen=True):
    """Where one rotating file series stood: file ``seq`` open at ``size`` bytes on disk, or (``size`` -1) no file
    open and ``seq`` the next one's number."""

    directory: str
    prefix: str
    ext: str
    seq: int
    size: int


class Begin(msgspec.Struct, tag=True):
    marks: list[Mark]


class Ready(msgspec.Struct, tag=True):
    payload: bytes


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Begin | Ready)


@runtime_checkable
class Marked(Protocol):
    """A sink that can say where its files stand and hold back sealing until the batch is completed."""

    def marks(self) -> list[Mark]: ...

    def commit(self) -> None: ...


class BatchLog:
    """The log of one parser; ``begin``, ``ready`` and ``done`` each one write to the OS (no fsync: it guards
    against a killed process, as the outputs' own unbuffered writes do)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.name = str(path)  # for the fan-out's disk-full log lines
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = os.fstat(self._fd).st_size

    def begin(self, marks: Sequence[Mark]) -> None:
        self._append(Begin(list(marks)))

    def ready(self, payload: bytes) -> None:
        self._append(Ready(payload))

    def done(self) -> None:
        os.ftruncate(self._fd, 0)
        self._size = 0

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _append(self, entry: Begin | Ready) -> None:
        """All or nothing, as the outputs' writes: a write cut short (a full disk) is cut back and raised."""
        data = _ENCODER.encode(entry)
        frame = _FRAME.pack(len(data), zlib.crc32(data)) + data
        self._size = append_whole(self._fd, frame, self._size)


def read_entries(path: Path) -> list[Begin | Ready]:
    """The whole entries of a log (none if it does not exist)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    entries: list[Begin | Ready] = []
    at = 0
    while at + _FRAME.size <= len(data):
        size, crc = _FRAME.unpack_from(data, at)
        body = data[at + _FRAME.size : at + _FRAME.size + size]
        if len(body) < size or zlib.crc32(body) != crc:
            break
        entries.append(_DECODER.decode(body))
        at += _FRAME.size + size
    return entries


def settle(path: Path) -> bytes | None:
    """Settle what a killed life left in the log at ``path``: a begun batch is rolled back here (and the log
    emptied); a ready one's payload is returned for the caller to roll forward, who then empties the log."""
    entries = read_entries(path)  # none, Begin, or Begin then Ready: a log holds one batch
    last = entries[-1] if entries else None
    if isinstance(last, Ready):
        return last.payload
    if isinstance(last, Begin):
        rollback(last.marks)
        log.warning("%s: rolled back a batch a killed parser had begun; its pages are fetched again", path.name)
    clear(path)
    return None


def clear(path: Path) -> None:
    """Empty a settled log (one that does not exist is empty)."""
    with contextlib.suppress(FileNotFoundError):
        os.truncate(path, 0)


def log_paths(directory: Path) -> list[Path]:
    """Every parser's log under ``directory`` (``<out>/batches``), if any."""
    return sorted(directory.glob("*.log")) if directory.is_dir() else []


def rollback(marks: Sequence[Mark]) -> None:
    """Cut each marked series back to its mark: the open file to its size, files opened after it removed."""
    for mark in marks:
        directory = Path(mark.directory)
        if not directory.is_dir():
            continue
        tail = f"(?:{re.escape(AGE)})?{re.escape(OPEN_SUFFIX)}"
        name = re.compile(re.escape(mark.prefix) + r"-(\d{5,})" + re.escape(mark.ext) + tail + r"\Z")
        for entry in os.scandir(directory):
            m = name.match(entry.name)
            if m is None:
                continue
            seq = int(m.group(1))
            if seq == mark.seq and mark.size >= 0:
                if entry.stat().st_size > mark.size:
                    os.truncate(entry.path, mark.size)
            elif seq >= mark.seq:
                os.unlink(entry.path)


def rollback_begun(directory: Path) -> None:
    """A node's start, before its files are sealed: roll back every parser's begun batch. Ready ones stay in their
    logs; the node rolls them forward once its frontier is up (:func:`webtrawl.parse.settle.settle_all`)."""
    for path in log_paths(directory):
        settle(path)
