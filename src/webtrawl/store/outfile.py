"""One output file being written, plain or encrypted to age recipients (``--encrypt-to``), behind one interface.

Both kinds take whole appends (all or nothing: a failed write, say on a full disk, leaves nothing of it) that survive
a kill of the process once ``append`` returns, and are sealed by giving them their final name.

**Plain** (:class:`PlainFile`): appended to ``NAME.open`` on an unbuffered descriptor, renamed ``NAME`` when sealed.

**Encrypted** (:class:`AgeFile`): an age file cannot be appended to and made whole again later without its key
(its last STREAM chunk carries a flag and a tag only the file key can make; the crawler holds only recipients).
So each append is written as a complete age file of its own, a *part* (``NAME.age.00007.open``, written under
``.tmp`` and renamed, so a part is never torn), while the writer keeps the open file's plaintext in memory. Sealing
encrypts that plaintext once more as one age file (``NAME.age``, written under ``.sealing`` and renamed) and then
removes the parts. After a kill -9 the parts are still there and each is whole: start-up recovery
(:func:`~webtrawl.store.recovery.recover_parts`) turns each into a sealed file of its own
(``PREFIX-SEQ-00007.EXT.age``) unless the sealed file was already complete. So a kill loses nothing written, and
every file ``age -d`` is given decrypts. The costs: each byte is encrypted twice, and the open file's plaintext is
held in memory, so an encrypted file is sealed at :data:`MAX_PLAIN` bytes or :data:`MAX_PARTS` appends, whichever
comes first.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from webtrawl.store.recovery import AGE, OPEN_SUFFIX, SEALING, TMP, finish, finish_as

MAX_PLAIN = 32 << 20  # plaintext an open encrypted file holds in memory at most
MAX_PARTS = 256  # parts an open encrypted file leaves behind at most (each its own file after a kill)


class OutFile(Protocol):
    path: Path  # the file as it is being written (for an encrypted one, its first part)
    size: int  # plaintext bytes appended

    def append(self, data: bytes | memoryview) -> None: ...

    def full(self) -> bool: ...

    def seal(self) -> Path: ...

    def discard(self) -> None: ...


def open_out(directory: Path, name: str, recipients: Sequence[Any] = ()) -> OutFile:
    """A new output file ``name`` in ``directory``: encrypted to ``recipients`` (pyrage objects) if any."""
    return AgeFile(directory, name, recipients) if recipients else PlainFile(directory / (name + OPEN_SUFFIX))


def _write_all(fd: int, data: bytes | memoryview) -> None:
    done = 0
    while done < len(data):  # a regular file takes it in one call unless the disk is full
        done += os.write(fd, data[done:] if done else data)


class PlainFile:
    """``NAME.open`` appended to with unbuffered writes, renamed ``NAME`` when sealed."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.size = 0
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)

    def append(self, data: bytes | memoryview) -> None:
        try:
            _write_all(self._fd, data)
        except BaseException:
            os.ftruncate(self._fd, self.size)  # no half record in front of the next one
            raise
        self.size += len(data)

    def full(self) -> bool:
        return False

    def seal(self) -> Path:
        os.fsync(self._fd)
        os.close(self._fd)
        return finish(self.path)

    def discard(self) -> None:
        os.close(self._fd)
        self.path.unlink(missing_ok=True)


class AgeFile:
    """An encrypted output file: one whole age file per append while open, one age file of it all when sealed."""

    def __init__(self, directory: Path, name: str, recipients: Sequence[Any]) -> None:
        self.final = directory / (name + AGE)
        self.path = self._part(0)
        self.size = 0
        self._recipients = list(recipients)
        self._plain = bytearray()
        self._parts: list[Path] = []

    def _part(self, k: int) -> Path:
        return self.final.with_name(f"{self.final.name}.{k:05d}{OPEN_SUFFIX}")

    def append(self, data: bytes | memoryview) -> None:
        import pyrage

        part = self._part(len(self._parts))
        _write_new(part, pyrage.encrypt(bytes(data), self._recipients))
        self._parts.append(part)
        self._plain += data
        self.size += len(data)

    def full(self) -> bool:
        return self.size >= MAX_PLAIN or len(self._parts) >= MAX_PARTS

    def seal(self) -> Path:
        import pyrage

        sealing = self.final.with_name(self.final.name + SEALING)
        _write_new(sealing, pyrage.encrypt(bytes(self._plain), self._recipients), sync=True)
        finish_as(sealing, self.final)
        for part in self._parts:
            part.unlink(missing_ok=True)
        self._plain = bytearray()
        return self.final

    def discard(self) -> None:
        for part in self._parts:
            part.unlink(missing_ok=True)
        self._plain = bytearray()


def _write_new(path: Path, data: bytes, sync: bool = False) -> None:
    """``data`` as the new file ``path``, written under a temporary name and renamed: whole or absent."""
    tmp = path.with_name(path.name + TMP)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        _write_all(fd, data)
        if sync:
            os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.rename(tmp, path)
