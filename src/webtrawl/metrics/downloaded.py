"""Bytes downloaded by a node, read back from its JSONL records (each has ``bytes``: the body as received).

The fetchers keep no byte counter in the frontier, so the supervisor follows the records its parsers write: every
few seconds it reads what was appended to each chunk since the last look and sums the ``bytes`` of complete lines.
Chunks are followed by inode, so a chunk renamed from ``.open`` to its final name when it rotates is not read
twice; a chunk read to its end and no longer growing is skipped by its size. On a resume the node starts over
from the first chunk, so the total is always that of the whole output directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec


class _Record(msgspec.Struct):
    bytes: int = 0


_decoder = msgspec.json.Decoder(_Record)
_READ_AT_MOST = 64 * 1024 * 1024  # per call: a huge backlog (a resume of a big crawl) is caught up over calls


class DownloadedBytes:
    def __init__(self, records_dir: Path) -> None:
        self.records_dir = records_dir
        self.total = 0
        self._offsets: dict[int, int] = {}  # inode -> bytes of the file already summed (whole lines only)

    def update(self) -> int:
        budget = _READ_AT_MOST
        try:
            entries = sorted(os.scandir(self.records_dir), key=lambda e: e.name)
        except OSError:
            return self.total
        for entry in entries:
            if budget <= 0:
                break
            if ".jsonl" not in entry.name:
                continue
            try:
                stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            done = self._offsets.get(stat.st_ino, 0)
            if stat.st_size <= done:
                if stat.st_size < done:  # cut back to its last whole record after a crash: re-read from there
                    self._offsets[stat.st_ino] = stat.st_size
                continue
            budget -= self._read(entry.path, stat.st_ino, done, min(stat.st_size - done, budget))
        return self.total

    def _read(self, path: str, inode: int, start: int, length: int) -> int:
        try:
            with open(path, "rb") as f:
                f.seek(start)
                chunk = f.read(length)
        except OSError:
            return 0
        end = chunk.rfind(b"\n") + 1  # whole lines only: the last one may still be being written
        for line in chunk[:end].splitlines():
            if line.strip():
                try:
                    self.total += _decoder.decode(line).bytes
                except msgspec.DecodeError:
                    continue
        self._offsets[inode] = start + end
        return len(chunk)
