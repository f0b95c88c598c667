"""``trawl export``: a crawl's JSONL items or page records, written after the fact to any sink.

The JSONL files are the crawl's source of truth, and may hold one URL twice (fetched again after a kill while its
first fetch was not yet completed). The export keeps the last set of each URL, as the live table sinks do: a first
pass notes where each URL's last group of lines is (one entry per URL in memory), the second writes only those. A
URL's lines are never split between two batches, so a table sink's per-URL replace sees all of them at once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import msgspec

from webtrawl.errors import ConfigError, InputError, WebtrawlError
from webtrawl.store.agekeys import open_output, output_files
from webtrawl.store.base import SinkContext
from webtrawl.store.batchlog import Marked
from webtrawl.store.registry import open_sink
from webtrawl.store.sinks.rows import RowMaker, Rows, What

log = logging.getLogger("webtrawl.store")

_BATCH_ROWS = 2_000
_DECODER = msgspec.json.Decoder()


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
    """(file index, line number, url, lines) of each run of consecutive lines with one URL; a torn last line of a
    file (a killed writer's, not yet sealed) is skipped. Encrypted files are decrypted with ``identity``."""
    for f, path in enumerate(files):
        start, url = 0, None
        lines: list[dict[str, Any]] = []
        with open_output(path, identity) as fh:
            for n, raw in enumerate(fh):
                if not raw.endswith(b"\n"):
                    break
                line = _DECODER.decode(raw)
                if line.get("url") != url:
                    if lines and url is not None:
                        yield f, start, url, lines
                    start, url, lines = n, line.get("url"), []
                lines.append(line)
        if lines and url is not None:
            yield f, start, url, lines


def latest(out: Path, what: What | str, identity: Path | None = None) -> Iterator[list[dict[str, Any]]]:
    """The lines of each URL's last set (of items or its record), file by file: two passes, one entry per URL.
    :class:`InputError` at once if the crawl has no such files; ``identity`` decrypts an encrypted crawl's."""
    return _latest(_files(out, What(what)), identity)


def _latest(files: Sequence[Path], identity: Path | None) -> Iterator[list[dict[str, Any]]]:
    last: dict[str, tuple[int, int]] = {}
    for f, start, url, _ in _groups(files, identity):
        last[url] = (f, start)
    for f, start, url, lines in _groups(files, identity):
        if last.get(url) == (f, start):  # else an earlier fetch of a URL fetched again: its last set wins
            yield lines


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
