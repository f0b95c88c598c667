"""The file sinks' shared life cycle: append whole writes to ``<prefix>-<seq><ext>.open``, seal by rename.

Each write reaches the OS in one go (an unbuffered descriptor, all or nothing: a failed write, say on a full disk, is
cut back so the same batch can be written again), so it survives a kill of the process. When a file is full it is
fsynced and sealed: renamed (CSV) or converted and renamed (Parquet). A file left ``.open`` by a killed process is
sealed the next time a sink of the same name prefix opens the directory (or by :func:`seal_sink_dir`), keeping every
whole write and cutting a torn tail. With ``recipients`` (``--encrypt-to``) the file is an age file
(:class:`~webtrawl.store.outfile.AgeFile`), which seals itself in memory (a sink's sealer reads plain files): a sink
whose files are not their appends put end to end (Parquet) gives the :class:`~webtrawl.store.outfile.Form` that
makes them.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from webtrawl.errors import ConfigError
from webtrawl.store.batchlog import Mark
from webtrawl.store.outfile import AgeFile, Form
from webtrawl.store.recovery import OPEN_SUFFIX, file_name, next_sequence, recover_journals

log = logging.getLogger("webtrawl.store")

Sealer = Callable[[Path], None]  # makes a closed, fsynced ``.open`` file whole and gives it its final name


class AppendFile:
    """One ``.open`` file at a time of a rotating series: sealed after ``rows_per_file`` rows (counted by the
    caller's appends), or whenever the caller seals it."""

    def __init__(
        self,
        directory: Path,
        prefix: str,
        ext: str,
        sealer: Sealer,
        rows_per_file: int,
        recipients: Sequence[Any] = (),
        form: Form | None = None,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        recover_journals(directory, prefix)  # an encrypted file a killed run left open
        self._recipients, self._form = recipients, form
        self._age: AgeFile | None = None  # the open file, when encrypted (sealed whole by AgeFile, not by sealer)
        self.rows_per_file = max(1, rows_per_file)
        self._rows = 0
        self.directory = directory
        self.prefix = prefix
        self.ext = ext
        self._sealer = sealer
        for left in sorted(directory.glob(f"{prefix}-*{ext}{OPEN_SUFFIX}")):  # a killed run of this process
            if next_sequence_name_ok(left.name, prefix, ext):
                sealer(left)
        self._seq = next_sequence(directory, prefix, ext)
        self._fd = -1
        self._size = 0
        self.path: Path | None = None
        self.hold = False  # a file that fills waits for commit(): the parser's sinks (store/batchlog.py)
        self._full: list[Path | AgeFile] = []

    @property
    def is_open(self) -> bool:
        return self._fd >= 0 or self._age is not None

    def append(self, data: bytes, rows: int) -> None:
        """Write ``data`` (``rows`` whole rows) all or nothing; seal the file once it holds its rows."""
        if self._recipients:
            if self._age is not None and (self._rows >= self.rows_per_file or self._age.full()):
                self.seal()  # a seal that failed (a full disk) is done before anything new is written
            if self._age is None:
                name = file_name(self.prefix, self._seq, self.ext)
                self._age = AgeFile(self.directory, name, self._recipients, self._form)
            self._age.append(data)
            self._rows += rows
            if self._rows >= self.rows_per_file or self._age.full():
                with contextlib.suppress(OSError):  # the rows are written: a failed seal is retried next time
                    self.seal()
            return
        if self._fd < 0:
            path = self.directory / (file_name(self.prefix, self._seq, self.ext) + OPEN_SUFFIX)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
            self.path, self._size = path, 0
        done = 0
        try:
            while done < len(data):
                done += os.write(self._fd, data[done:] if done else data)
        except BaseException:
            os.ftruncate(self._fd, self._size)
            if self._size == 0:  # nothing whole in it: no empty file left behind
                self._discard()
            raise
        self._size += len(data)
        self._rows += rows
        if self._rows >= self.rows_per_file:
            self.seal()

    def seal(self) -> None:
        """fsync, close and seal the current file (if any); the next append starts the next one. Held, the file
        is closed now and sealed by :meth:`commit`."""
        if self._age is not None:
            if self.hold:
                self._full.append(self._age)
            else:
                self._age.seal()  # kept open if this fails, so a retry seals it
            self._age, self._rows = None, 0
            self._seq += 1
            return
        self._rows = 0
        if self._fd < 0 or self.path is None:
            return
        fd, path = self._fd, self.path
        self._fd, self.path = -1, None
        os.fsync(fd)
        os.close(fd)
        if self.hold:
            self._full.append(path)
        else:
            self._sealer(path)
        self._seq += 1

    def mark(self) -> Mark:
        """Where the series stands, for a batch log's rollback (:mod:`webtrawl.store.batchlog`)."""
        size = self._age.disk_size if self._age is not None else self._size if self._fd >= 0 else -1
        return Mark(str(self.directory), self.prefix, self.ext, self._seq, size)

    def commit(self) -> None:
        """Seal the files that filled while held (a seal that fails, a full disk, is retried by the next commit)."""
        with contextlib.suppress(OSError):
            while self._full:
                self._seal_held()

    def _seal_held(self) -> None:
        done = self._full[0]
        if isinstance(done, AgeFile):
            done.seal()
        else:
            self._sealer(done)
        self._full.pop(0)

    def close(self) -> None:
        """Seal everything, the held files and the open one (a seal that fails raises, as an unheld one does)."""
        while self._full:
            self._seal_held()
        self.hold = False
        self.seal()

    def _discard(self) -> None:
        os.close(self._fd)
        if self.path is not None:
            self.path.unlink(missing_ok=True)
        self._fd, self.path = -1, None


def next_sequence_name_ok(name: str, prefix: str, ext: str) -> bool:
    """``<prefix>-<digits><ext>.open`` exactly (``n-p1`` must not take ``n-p10``'s files)."""
    middle = name[len(prefix) + 1 : -len(ext + OPEN_SUFFIX)]
    return name.startswith(prefix + "-") and middle.isdigit()


def cut(path: Path, keep: int) -> None:
    """Truncate ``path`` to ``keep`` bytes, durably, logging what a torn tail cost."""
    size = path.stat().st_size
    if keep < size:
        log.warning("%s: cut %d bytes of an incomplete write", path.name, size - keep)
    with open(path, "r+b") as fh:
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())


def seal_sink_dir(directory: Path, ext: str, sealer: Sealer, prefix: str = "") -> int:
    """Seal every ``<prefix>*<ext>.open`` file in ``directory`` (no writer of theirs may be running), and the
    encrypted ones' journals; how many."""
    if not directory.is_dir():
        return 0
    recover_journals(directory, start=glob.escape(prefix))
    found = sorted(directory.glob(f"{prefix}*{ext}{OPEN_SUFFIX}"))
    for path in found:
        sealer(path)
    return len(found)


def check_writable(directory: Path, name: str) -> None:
    """At start (a sink's ``probe``): ConfigError if files cannot be created in ``directory``."""
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigError(f"sink {name!r}: {directory} is not writable")
