"""One output file being written, plain or encrypted to age recipients (``--encrypt-to``), behind one interface.

Both kinds take whole appends (all or nothing: a failed write, say on a full disk, leaves nothing of it) that survive
a kill of the process once ``append`` returns, and are sealed by giving them their final name; a seal that fails (an
encrypted file needs room for its sealed copy) leaves the file open, so it can be sealed again.

**Plain** (:class:`PlainFile`): appended to ``NAME.open`` on an unbuffered descriptor, renamed ``NAME`` when sealed.

**Encrypted** (:class:`AgeFile`): an age file cannot be appended to and made whole again later without its key
(its last STREAM chunk carries a flag and a tag only the file key can make; the crawler holds only recipients).
So each append is encrypted as a complete age file of its own and appended, with its length in front, to a journal
``NAME.age.open`` (one ``write``, cut back if it fails, like a plain file), while the writer keeps the open file's
plaintext in memory. Sealing encrypts that plaintext once more as one age file (``NAME.age``, written under
``.sealing``, fsynced and renamed) and then removes the journal. After a kill -9 the journal's whole entries are
still there: start-up recovery (:func:`~webtrawl.store.recovery.recover_journals`) writes each one out as a sealed
file of its own (``PREFIX-SEQ-KKKKK.EXT.age``), unless the sealed file was already complete. So a kill loses
nothing written, and every sealed file is one that ``age -d`` decrypts. The costs: each byte is encrypted twice
(the ciphers are cheap: the X25519 header of each append is most of it), and the open file's plaintext is held in
memory, so an encrypted file is sealed at :data:`MAX_PLAIN` bytes or :data:`MAX_PARTS` appends (what a kill would
turn into that many small files), whichever comes first.

A format whose files are not a concatenation of their appends (Parquet, a JSON array) gives a :class:`Form`: what
one append is as a file of its own (a journal entry, so what a kill leaves is still files of that format) and what
the appends are as the sealed file. Both are built in memory: no plaintext reaches the disk.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from webtrawl.store.recovery import (
    AGE,
    OPEN_SUFFIX,
    SEALING,
    append_whole,
    finish,
    finish_as,
    journal_entry,
    write_whole,
)

MAX_PLAIN = 32 << 20  # plaintext an open encrypted file holds in memory at most
MAX_PARTS = 1024  # appends an open encrypted file holds at most (each its own file after a kill)

Sealer = Callable[[Path], None]  # makes a closed, fsynced ``.open`` file whole and gives it its final name


class Form(Protocol):
    """How an encrypted file's appends become files of its format (the identity for line and record formats)."""

    def part(self, data: bytes) -> bytes:
        """One append as a whole file of its own: a journal entry, and what a kill leaves of it."""
        ...

    def whole(self, data: bytes) -> bytes:
        """All the appends (``data``: their bytes, concatenated) as the sealed file."""
        ...


class OutFile(Protocol):
    path: Path  # the file as it is being written (for an encrypted one, its first part)
    size: int  # plaintext bytes appended

    @property
    def disk_size(self) -> int:
        """Bytes on disk (an encrypted file's journal): where a rollback cuts it back to."""
        ...

    def append(self, data: bytes | memoryview) -> None: ...

    def full(self) -> bool: ...

    def seal(self) -> Path: ...

    def discard(self) -> None: ...

    def deleted(self) -> bool:
        """Whether the file was deleted while open (by someone else: its records went with it)."""
        ...

    def abandon(self) -> None:
        """Let go of a deleted file (close it; nothing is left to remove or seal)."""
        ...


def open_out(
    directory: Path, name: str, recipients: Sequence[Any] = (), form: Form | None = None, sealer: Sealer | None = None
) -> OutFile:
    """A new output file ``name`` in ``directory``: encrypted to ``recipients`` (pyrage objects) if any, made by
    ``form``; else plain, sealed by ``sealer`` (default: renamed as it is)."""
    if recipients:
        return AgeFile(directory, name, recipients, form)
    return PlainFile(directory / (name + OPEN_SUFFIX), sealer)


class PlainFile:
    """``NAME.open`` appended to with unbuffered writes, renamed ``NAME`` when sealed (by ``sealer`` if given)."""

    def __init__(self, path: Path, sealer: Sealer | None = None) -> None:
        self.path = path
        self.size = 0
        self._sealer = sealer
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)

    @property
    def disk_size(self) -> int:
        return self.size

    def append(self, data: bytes | memoryview) -> None:
        self.size = append_whole(self._fd, data, self.size)

    def full(self) -> bool:
        return False

    def seal(self) -> Path:
        if self._fd >= 0:  # a seal that failed after closing (the rename) goes on from there
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1
        if self._sealer is None:
            return finish(self.path)
        self._sealer(self.path)
        return self.path.with_name(self.path.name.removesuffix(OPEN_SUFFIX))

    def discard(self) -> None:
        self.abandon()
        self.path.unlink(missing_ok=True)

    def deleted(self) -> bool:
        return self._fd >= 0 and os.fstat(self._fd).st_nlink == 0

    def abandon(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class AgeFile:
    """An encrypted output file: a journal of whole age files while open, one age file of it all when sealed."""

    def __init__(self, directory: Path, name: str, recipients: Sequence[Any], form: Form | None = None) -> None:
        self.final = directory / (name + AGE)
        self._form = form
        self._journal = PlainFile(self.final.with_name(self.final.name + OPEN_SUFFIX))
        self.path = self._journal.path
        self.size = 0
        self.appends = 0
        self._recipients = list(recipients)
        self._plain = bytearray()

    @property
    def disk_size(self) -> int:
        return self._journal.size

    def append(self, data: bytes | memoryview) -> None:
        import pyrage

        plain = bytes(data)
        part: bytes = pyrage.encrypt(self._form.part(plain) if self._form else plain, self._recipients)
        self._journal.append(journal_entry(part))  # all or nothing
        self._plain += data
        self.size += len(data)
        self.appends += 1

    def full(self) -> bool:
        return self.size >= MAX_PLAIN or self.appends >= MAX_PARTS

    def seal(self) -> Path:
        import pyrage

        sealing = self.final.with_name(self.final.name + SEALING)
        plain = self._form.whole(bytes(self._plain)) if self._form else bytes(self._plain)
        write_whole(sealing, pyrage.encrypt(plain, self._recipients))
        finish_as(sealing, self.final)
        self.discard()
        return self.final

    def discard(self) -> None:
        self._journal.discard()
        self._plain = bytearray()

    def deleted(self) -> bool:
        return self._journal.deleted()

    def abandon(self) -> None:
        self._journal.abandon()
        self._plain = bytearray()
