"""``csv:DIR``: items or page records as CSV files (RFC 4180: UTF-8, CRLF, quoted where needed, a header per file).

Cells: text as is, numbers in their shortest exact form, booleans ``true``/``false``, null (or absent) empty, and
lists and objects as their JSON text (``["a","b"]``, ``{"k":1}``), so a nested field survives a spreadsheet and
``json.loads`` gives it back. A field seen for the first time starts a new file whose header adds its column at the
end; earlier files keep their header. Files rotate every ``chunk`` rows like the JSONL records (``.open`` while
written, then renamed). Like the JSONL files, a URL fetched twice (in flight at a kill) may appear twice; the table
sinks keep one set of rows per URL.
"""

from __future__ import annotations

import contextlib
import csv
import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from webtrawl.formats.sinkurl import SinkUrl
from webtrawl.store.base import PageOutput, Sink, SinkContext
from webtrawl.store.recovery import finish
from webtrawl.store.sinks.files import SeriesSink, cut, resume_series, seal_sink_dir
from webtrawl.store.sinks.rows import RowMaker, Rows, What
from webtrawl.store.sinks.schema import json_text

EXT = ".csv"


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json_text(value)


class CsvSink(SeriesSink):
    def __init__(self, directory: Path, what: What, ctx: SinkContext, name: str) -> None:
        self.name = name
        self.file = resume_series(directory, ctx.prefix, EXT, seal_csv, max(1, ctx.chunk), ctx.recipients())
        self.file.hold = True  # a full file is sealed by commit(), once its batch is completed
        self.rows = RowMaker(what, ctx.crawl_id)
        self.header: list[str] = []
        self._known: set[str] = set()

    def write(self, batch: Sequence[PageOutput]) -> None:
        self.write_rows(self.rows(batch))

    def write_rows(self, rows: Rows) -> None:
        if not rows.rows:
            return
        new = [n for row in rows.rows for n, v in row.items() if v is not None and n not in self._known]
        # A wider header starts a new file; so does a full one whose seal failed after its last write (retried here,
        # before the header check, so a new file always gets its header).
        self.file.rotate(bool(new))
        if new:
            for name in new:
                if name not in self._known:
                    self._known.add(name)
                    self.header.append(name)
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\r\n")
        if self.file.file is None:
            writer.writerow(self.header)
        header = self.header
        writer.writerows([cell_text(row.get(n)) for n in header] for row in rows.rows)
        self.file.write(buf.getvalue().encode(), len(rows.rows))


def open_csv(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    return CsvSink(ctx.out_dir / spec.target, What(stream), ctx, spec.name)


def _lines(text: str, ends: list[int]) -> Iterator[str]:
    """The lines of ``text``, recording in ``ends`` the offset after each line handed out."""
    done = 0
    for line in io.StringIO(text, newline=""):
        done += len(line)
        ends.append(done)
        yield line


@contextlib.contextmanager
def _field_limit(size: int) -> Iterator[None]:
    """The csv module's cell limit (128 KiB by default, for the whole process) raised to ``size`` meanwhile: a cell
    this sink wrote whole is never taken for a torn tail."""
    before = csv.field_size_limit()
    csv.field_size_limit(max(before, size))
    try:
        yield
    finally:
        csv.field_size_limit(before)


def seal_csv(path: Path) -> None:
    """Cut a CSV ``.open`` file after its last whole row (header width, CRLF-terminated) and rename it."""
    # Latin-1 maps each byte to one character, so offsets are byte offsets; quotes, commas and line ends are ASCII
    # and never part of a UTF-8 multi-byte sequence, so the CSV structure reads the same.
    text = path.read_bytes().decode("latin-1")
    ends: list[int] = []
    reader = csv.reader(_lines(text, ends), strict=True)
    header_end = keep = 0
    with _field_limit(len(text)), contextlib.suppress(csv.Error, StopIteration):
        width = len(next(reader))
        if text[ends[-1] - 1] == "\n":
            header_end = keep = ends[-1]
            for row in reader:
                if len(row) != width or text[ends[-1] - 1] != "\n":
                    break
                keep = ends[-1]
    if keep <= header_end:  # not one whole row
        path.unlink()
        return
    cut(path, keep)
    finish(path)


def seal_csv_dir(directory: Path, prefix: str = "") -> int:
    return seal_sink_dir(directory, EXT, seal_csv, prefix)
