"""``json:FILE``: items or page records as one JSON array in one file, for small datasets.

FILE is only ever replaced whole (written beside it, fsynced, renamed over it), so whoever reads it, whenever, finds
a valid JSON array: ``[]`` from the moment the sink opens, then every row as of the last time a writer closed. The
rows themselves go to a journal per writing process, ``FILE.parts/<node>-p<i>.jsonl``: one line per URL and write
(the URL's whole set of rows), appended in one ``write`` so a kill -9 leaves at most a torn last line (cut when the
same process opens its journal again, skipped by readers meanwhile), stamped with the time it was written.

When a writer closes (a parser at the end of the crawl, ``trawl export``) it rebuilds FILE from every journal under
a file lock: the latest line of each (crawl, URL) wins, so a URL fetched again after a kill -9 and a resume has one set
of rows, and the last writer to close leaves every row of the crawl. The rebuild reads all journals twice and
rewrites the whole file, and keeps one entry per URL in memory: fine for thousands of rows, not for millions (use
``jsonl:``, ``parquet:`` or a table sink there).

**Encrypted** (``--encrypt-to``): the rebuild cannot be done, as the writers cannot read back what they encrypted
(least of all another process's journal, or a killed run's). So each writing process writes its own series of JSON
array files beside FILE, ``<stem>-<prefix>-<seq><suffix>.age`` (``items-local-p0-00000.json.age``), each an age file
(:mod:`webtrawl.store.outfile`: its writes journalled encrypted, each one a JSON array of its own, what a kill -9
leaves as recovered files ``...-<seq>-<k>.json.age``; its plaintext in memory until it is sealed, at close or at
32 MiB or 1,024 writes). Every file decrypts to a valid JSON array, and the arrays in name order hold every row;
with one writer and one file, it is byte for byte the FILE a plain crawl writes. A URL written twice (fetched again
after a kill -9, or in another recrawl round) is in two of them: keep the last (as with ``jsonl:``). No FILE is
written.
"""

from __future__ import annotations

import fcntl
import glob
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec

from webtrawl.errors import ConfigError
from webtrawl.formats.sinkurl import SinkUrl
from webtrawl.store.base import PageOutput, Sink, SinkContext
from webtrawl.store.batchlog import Mark
from webtrawl.store.recovery import append_whole, finish, recover_journals
from webtrawl.store.series import Series
from webtrawl.store.sinks.files import check_writable, cut, resume_series
from webtrawl.store.sinks.rows import RowMaker, Rows, What

_ENCODE = msgspec.json.Encoder().encode


class _Key(msgspec.Struct):
    crawl: str
    url: str
    at: int = 0  # when it was written (ns): the latest of a URL's lines wins, whichever journal it is in


class _Line(msgspec.Struct):
    rows: list[msgspec.Raw]


def parts_dir(path: Path) -> Path:
    return path.with_name(path.name + ".parts")


def _series(path: Path, prefix: str) -> tuple[str, str]:
    """The name prefix and extension of a process's encrypted files of FILE (``items-local-p0``, ``.json``)."""
    return f"{path.stem if path.suffix else path.name}-{prefix}", path.suffix or ".json"


class ArrayForm:
    """An encrypted file's appends (rows, each followed by ``,\n``) as the JSON array the plain rebuild writes."""

    def part(self, data: bytes) -> bytes:
        return self.whole(data)

    def whole(self, data: bytes) -> bytes:
        return b"[\n" + data.removesuffix(b",\n") + b"\n]\n" if data else b"[\n]\n"


def _sealed(path: Path) -> None:
    finish(path)  # no plain file is ever opened in an encrypted series


class JsonSink:
    def __init__(self, path: Path, what: What, ctx: SinkContext, name: str) -> None:
        self.name = name
        self.path = path
        self.rows = RowMaker(what, ctx.crawl_id)
        self.crawl = ctx.crawl_id
        self._journal = parts_dir(path) / f"{ctx.prefix}.jsonl"
        self._fd = -1  # the journal is opened at the first write (a probe writes nothing)
        self._size = 0
        self._age: Series | None = None
        if ctx.encrypt_to:
            name, ext = _series(path, ctx.prefix)
            self._age = resume_series(path.parent, name, ext, _sealed, 0, ctx.recipients(), ArrayForm())
            self._age.hold = True  # a full file is sealed by commit(), once its batch is completed
        elif not path.exists():
            rebuild(path)

    def _open(self) -> int:
        journal = self._journal
        if journal.exists():
            data = journal.read_bytes()
            cut(journal, data.rfind(b"\n") + 1)  # a torn line of this process's killed run
        self._fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._size = os.fstat(self._fd).st_size
        return self._fd

    def write(self, batch: Sequence[PageOutput]) -> None:
        self.write_rows(self.rows(batch))

    def write_rows(self, rows: Rows) -> None:
        by_url: dict[str, list[dict[str, Any]]] = {url: [] for url in rows.urls}
        at = time.time_ns()
        for row in rows.rows:
            by_url.setdefault(row["url"], []).append(row)
        if self._age is not None:
            found = [row for rows_of_url in by_url.values() for row in rows_of_url]
            if found:  # the rows in the order the plain rebuild writes them
                self._age.write(b"".join(_ENCODE(row) + b",\n" for row in found), len(found))
            return
        data = b"".join(
            _ENCODE({"crawl": self.crawl, "url": url, "at": at, "rows": found}) + b"\n" for url, found in by_url.items()
        )
        fd = self._fd if self._fd >= 0 else self._open()
        self._size = append_whole(fd, data, self._size)  # all or nothing, so the same batch can be written again

    def flush(self) -> None:
        """Every write already reached the OS (as the JSONL files do); FILE is rebuilt at close."""

    def marks(self) -> list[Mark]:
        """Where the encrypted series stands, for a batch log's rollback: its rows are appended as they come. The
        journals of plain FILE need none: a page written again replaces its line when FILE is rebuilt."""
        return [self._age.mark()] if self._age is not None else []

    def commit(self) -> None:
        if self._age is not None:
            self._age.commit()

    def close(self) -> None:
        if self._age is not None:
            self._age.close()
        if self._fd < 0:
            return
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1
        rebuild(self.path)

    def probe(self) -> None:
        """At start: the file's directory can be written (opening the sink made it and FILE), and FILE is this
        sink's (its journals beside it): another file of that name is not replaced, nor is a directory written."""
        check_writable(self.path.parent, self.name)
        if self._age is None and not parts_dir(self.path).is_dir():
            what = "a directory" if self.path.is_dir() else "no json sink's file"
            raise ConfigError(
                f"{self.name}: {self.path} is {what} (no {parts_dir(self.path).name}/ beside it): name another file"
            )


def _lines(journals: Sequence[Path]) -> Iterator[tuple[int, int, bytes]]:
    """(journal index, line number, line) of every whole line."""
    for j, journal in enumerate(journals):
        with journal.open("rb") as fh:
            for n, line in enumerate(fh):
                if line.endswith(b"\n"):
                    yield j, n, line


def rebuild_left(path: Path, prefix: str = "") -> None:
    """At a node's start: a killed crawl's FILE holds its last rebuild; bring it up to the journals (all of them:
    ``prefix`` is not needed, a rebuild only reads). An encrypted crawl's: seal what its processes left open."""
    if parts_dir(path).is_dir():
        rebuild(path)
    if path.parent.is_dir():
        recover_journals(path.parent, start=glob.escape(_series(path, prefix)[0]))


def rebuild(path: Path) -> int:
    """Write FILE from the journals, atomically; returns how many rows it holds."""
    parts = parts_dir(path)
    parts.mkdir(parents=True, exist_ok=True)
    with (parts / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        journals = sorted(parts.glob("*.jsonl"))
        key_of = msgspec.json.Decoder(_Key).decode
        last: dict[tuple[str, str], tuple[int, int, int]] = {}
        for j, n, line in _lines(journals):
            key = key_of(line)
            mine = (key.at, j, n)
            if last.setdefault((key.crawl, key.url), mine) < mine:
                last[(key.crawl, key.url)] = mine
        wanted = {(j, n) for _, j, n in last.values()}
        del last
        rows_of = msgspec.json.Decoder(_Line).decode
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        count = 0
        with tmp.open("wb") as out:
            out.write(b"[")
            for j, n, line in _lines(journals):
                if (j, n) in wanted:
                    for row in rows_of(line).rows:
                        out.write(b",\n" if count else b"\n")
                        out.write(bytes(row))
                        count += 1
            out.write(b"\n]\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
        return count


def open_json(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    if not spec.target:
        raise ConfigError(f"sink {spec.name!r}: name a file (json:FILE)")
    return JsonSink(ctx.out_dir / spec.target, What(stream), ctx, spec.name)
