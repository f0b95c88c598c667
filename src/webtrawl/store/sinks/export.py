"""``trawl export``: a crawl's JSONL items or page records, written after the fact to any sink.

The JSONL files are the crawl's source of truth, and may hold one URL twice (fetched again after a kill while its
first fetch was not yet completed). The export keeps the last set of each URL, as the live table sinks do: a first
pass notes where each URL's last set of lines is (one entry per URL in memory), the second writes only those. A set
is the lines of one fetch: a page's items run on from one chunk file into the next when the first fills (their
``index`` goes on, their ``fetch_time`` is the same), and its pieces are one set, held until the last is read. A
URL's lines are never split between two batches, so a table sink's per-URL replace sees all of them at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

import msgspec

from webtrawl.errors import ConfigError, InputError, WebtrawlError
from webtrawl.store.agekeys import open_output, output_files
from webtrawl.store.base import SinkContext
from webtrawl.store.batchlog import Marked
from webtrawl.store.recovery import OPEN_SUFFIX
from webtrawl.store.registry import open_sink
from webtrawl.store.sinks.rows import RowMaker, Rows, What

log = logging.getLogger("webtrawl.store")

_BATCH_ROWS = 2_000
_DECODER = msgspec.json.Decoder()
_SET_KEYS = ("url", "fetch_time", "index")  # what tells the next line of a set (_continues)


@runtime_checkable
class RowSink(Protocol):
    """A sink that also takes rows made elsewhere (every built-in; a user's class may not)."""

    name: str

    def write_rows(self, rows: Rows) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def _files(out: Path, what: What) -> list[Path]:
    directory = out / what.value
    if not directory.is_dir():
        raise InputError(f"{out} has no {what.value}/ directory: was the crawl run with {_hint(what)}?")
    return output_files(directory, ".jsonl")


def _hint(what: What) -> str:
    return "--extract" if what is What.ITEMS else "--jsonl"


def _groups(files: Sequence[Path], identity: Path | None) -> Iterator[tuple[int, int, str, list[dict[str, Any]]]]:
    """(file index, line number, url, lines) of each run of consecutive lines of one fetch of a URL (see
    :func:`_continues`); a torn last line of a file (a killed writer's, not yet sealed) is skipped. Encrypted files
    are decrypted with ``identity``."""
    for f, path in enumerate(files):
        start = 0
        lines: list[dict[str, Any]] = []
        with _open(path, identity) as fh:
            for n, raw in enumerate(fh):
                if not raw.endswith(b"\n"):
                    break
                line = _DECODER.decode(raw)
                if lines and not _continues(lines[-1], line):
                    yield from _run(f, start, lines)
                    start, lines = n, []
                lines.append(line)
        yield from _run(f, start, lines)


def _open(path: Path, identity: Path | None) -> BinaryIO:
    """A file listed while still open may be sealed (renamed) before it is read, in a crawl read while it runs:
    then it is read under its sealed name."""
    try:
        return open_output(path, identity)
    except FileNotFoundError:
        if not path.name.endswith(OPEN_SUFFIX):
            raise
        return open_output(path.with_name(path.name.removesuffix(OPEN_SUFFIX)), identity)


def _run(f: int, start: int, lines: list[dict[str, Any]]) -> Iterator[tuple[int, int, str, list[dict[str, Any]]]]:
    url = lines[0].get("url") if lines else None
    if url is not None:
        yield f, start, url, lines


def _continues(last: Mapping[str, Any], line: Mapping[str, Any]) -> bool:
    """``line`` is the next item of the fetch ``last`` is of: the same URL and fetch time, the next index (a page
    record, without an index, is a fetch of its own)."""
    index = last.get("index")
    return (
        line.get("url") == last.get("url")
        and line.get("fetch_time") == last.get("fetch_time")
        and isinstance(index, int)
        and line.get("index") == index + 1
    )


def latest(out: Path, what: What | str, identity: Path | None = None) -> Iterator[list[dict[str, Any]]]:
    """The lines of each URL's last set (of items or its record), file by file: two passes, one entry per URL.
    :class:`InputError` at once if the crawl has no such files; ``identity`` decrypts an encrypted crawl's.

    A page extracted again with no item (a listing emptied in a recrawl round) writes no item line: its page
    record says it (``items: 0``), so the items of an earlier fetch are left out when a later record says none."""
    what = What(what)
    files = _files(out, what)
    if what is What.RECORDS or not (out / What.RECORDS.value).is_dir():
        return _latest(files, identity)
    return _latest(files, identity, lambda urls: _emptied(_files(out, What.RECORDS), identity, urls))


class _Extracted(msgspec.Struct):
    """What a page record says of its extraction (``items`` is absent when the page was not extracted)."""

    url: str = ""
    fetch_time: str = ""
    items: int | None = None


_RECORD_DECODER = msgspec.json.Decoder(_Extracted)


def _emptied(files: Sequence[Path], identity: Path | None, urls: Collection[str]) -> dict[str, str]:
    """The last fetch time at which each of ``urls`` was extracted with no item, from its page records."""
    found: dict[str, str] = {}
    for path in files:
        with _open(path, identity) as fh:
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                record = _RECORD_DECODER.decode(raw)
                if record.items == 0 and record.url in urls and record.fetch_time > found.get(record.url, ""):
                    found[record.url] = record.fetch_time
    return found


def _latest(
    files: Sequence[Path], identity: Path | None, emptied: Callable[[Collection[str]], dict[str, str]] | None = None
) -> Iterator[list[dict[str, Any]]]:
    # url -> where its last set is, or its pieces (a set cut by a full chunk file): one small entry per URL
    last: dict[str, tuple[int, int] | list[tuple[int, int]]] = {}
    # where the last set of each file read so far ends (url, fetch time, index), for the one cut set that can go on
    # in a later file: one entry per file, not per URL (memory)
    ends: dict[str, dict[str, Any]] = {}
    before: tuple[int, dict[str, Any]] | None = None  # the file and end of the set read last
    times: dict[str, str] = {}  # with ``emptied``: the fetch time of each URL's last set
    for f, start, url, lines in _groups(files, identity):
        if before is not None and before[0] != f:
            ends[before[1]["url"]] = before[1]
        found, end = last.get(url), ends.get(url)
        if found is not None and end is not None and _continues(end, lines[0]):  # the rest of a cut set
            last[url] = [*(found if isinstance(found, list) else [found]), (f, start)]
        else:  # else an earlier fetch of a URL fetched again: its last set wins
            last[url] = (f, start)
        before = f, {key: lines[-1].get(key) for key in _SET_KEYS}
        if emptied is not None:
            times[url] = str(lines[0].get("fetch_time") or "")
    if emptied is not None:  # the URLs extracted later with no item: their last set is the empty one
        for url, when in emptied(last.keys()).items():
            if when > times[url]:
                del last[url]
    held: dict[str, list[dict[str, Any]]] = {}  # the pieces of a set read so far
    pieces_read: dict[str, int] = {}
    for f, start, url, lines in _groups(files, identity):
        found = last.get(url)  # None: a URL written since the first pass (a crawl read while it runs)
        if found == (f, start):
            yield lines
        elif isinstance(found, list) and (f, start) in found:
            held.setdefault(url, []).extend(lines)
            pieces_read[url] = pieces_read.get(url, 0) + 1
            if pieces_read[url] == len(found):
                del pieces_read[url]
                yield held.pop(url)


def export(
    out: Path, what: What | str, urls: Sequence[str], crawl_id: str, chunk: int = 10_000, identity: Path | None = None
) -> tuple[int, int]:
    """Write the crawl's ``what`` to every sink in ``urls``; returns (rows, URLs) written to each. ``identity``: the
    age identity file that decrypts an encrypted crawl's files (``--encrypt-to``)."""
    what = What(what)
    groups = latest(out, what, identity)  # no such files: the error comes before any sink is opened
    pages = 0
    ctx = SinkContext(out_dir=out, prefix="export", crawl_id=crawl_id, chunk=chunk)
    sinks: list[RowSink] = []
    rows_done = 0
    try:
        for url in urls:
            sink = open_sink(url, what, ctx)
            if not isinstance(sink, RowSink):
                sink.close()
                raise ConfigError(f"sink {sink.name!r} takes no exported rows (it has no write_rows)")
            sinks.append(sink)
        maker = RowMaker(what, crawl_id)
        pending: list[dict[str, Any]] = []
        for lines in groups:
            pages += 1
            pending.extend(lines)
            if len(pending) >= _BATCH_ROWS:
                rows_done += _write(sinks, maker.from_dicts(pending))
                pending = []
        rows_done += _write(sinks, maker.from_dicts(pending))
    except BaseException:
        _close(sinks, quiet=True)  # the error that stopped the export is the one to tell
        raise
    _close(sinks)
    return rows_done, pages


def _close(sinks: Sequence[RowSink], *, quiet: bool = False) -> None:
    """Close every sink; one whose ``close()`` fails (a user's class, a connection lost) is the export's one error
    line, not a traceback, once the others are closed: what it holds of the export is not known to be whole."""
    failed = ""
    for sink in sinks:
        try:
            sink.close()
        except Exception as exc:
            failed = failed or f"sink {sink.name!r}: closing it failed: {type(exc).__name__}: {exc}"
    if failed and not quiet:
        raise WebtrawlError(failed)


def _write(sinks: Sequence[RowSink], rows: Rows) -> int:
    if not rows.rows:
        return 0
    for sink in sinks:
        sink.write_rows(rows)
        sink.flush()
        if isinstance(sink, Marked):  # no batch to complete: a file that filled is sealed now
            sink.commit()
    return len(rows.rows)
