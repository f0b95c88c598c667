"""The file sinks' shared life cycle (a :class:`~webtrawl.store.series.Series`): append whole writes to
``<prefix>-<seq><ext>.open``, seal by rename.

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

import glob
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from webtrawl.errors import ConfigError
from webtrawl.store.batchlog import Mark
from webtrawl.store.outfile import Form, Sealer
from webtrawl.store.recovery import OPEN_SUFFIX, recover_journals
from webtrawl.store.series import Series

log = logging.getLogger("webtrawl.store")


def resume_series(
    directory: Path,
    prefix: str,
    ext: str,
    sealer: Sealer,
    per_file: int,
    recipients: Sequence[Any] = (),
    form: Form | None = None,
) -> Series:
    """A sink's series of files, after sealing what a killed run of the same process left open: its ``.open``
    files (by ``sealer``, which keeps every whole write) and an encrypted file's journal. ``per_file``: rows per file
    (0: no bound)."""
    directory.mkdir(parents=True, exist_ok=True)
    recover_journals(directory, prefix)
    for left in sorted(directory.glob(f"{prefix}-*{ext}{OPEN_SUFFIX}")):
        if next_sequence_name_ok(left.name, prefix, ext):
            sealer(left)
    return Series(directory, prefix, ext, recipients, per_file=per_file, form=form, sealer=sealer)


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


class SeriesSink:
    """The life cycle of a sink whose rows go to one held :class:`Series` (``self.file``): every write already
    reached the OS, a batch log marks where the series stands, commit seals the files its batches filled."""

    name: str
    file: Series

    def flush(self) -> None:
        """Every write already reached the OS."""

    def marks(self) -> list[Mark]:
        return [self.file.mark()]

    def commit(self) -> None:
        self.file.commit()

    def close(self) -> None:
        self.file.close()

    def probe(self) -> None:
        check_writable(self.file.directory, self.name)
