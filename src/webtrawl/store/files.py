"""The file sinks: WARC, JSONL records, JSONL items and the dropped-links stream, each one :class:`Sink`.

Every file sink writes straight to the OS (no buffer in this process), so ``flush`` has nothing left to do and a
kill -9 after ``write`` returned loses nothing. A write that fails (full disk) is cut back by the writer to the last
whole record; the sink remembers how far into the batch it got, so the fan-out's retry with the same batch writes
each line exactly once. A file that fills is sealed only once its batch is completed (``commit``), and ``marks``
says where the files stand before a batch, for the parser's batch log (:mod:`webtrawl.store.batchlog`). On
opening, a sink seals the ``.open`` files its predecessor with the same prefix left (a parser restarted after a
kill, once its batch log is settled), so they do not wait for the next start of the node.

Dropped links go to ``<out>/dropped/<node>-p<i>-NNNNN.jsonl``, one line per distinct (URL, reason) this parser
drops: ``{"url", "reason", "parent", "depth"}``. Together with the records this accounts for every URL a crawl
discovers: each one is either fetched or failed with its reason (``records/``) or not followed with its reason
(``dropped/``). The counters count every occurrence; the stream skips repeats a bounded LRU has already seen (a
link on every page of a site is one line, not thousands), so its cost stays proportional to distinct URLs.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from webtrawl.errors import ConfigError
from webtrawl.formats.sinkurl import SinkUrl
from webtrawl.store.base import Drop, PageOutput, Sink, SinkContext
from webtrawl.store.jsonl import JsonlWriter
from webtrawl.store.recovery import seal_open_files
from webtrawl.store.sinks.files import SeriesSink
from webtrawl.store.sinks.rows import Rows
from webtrawl.store.warc import WarcWriter

_DEDUP = 65_536


class _Progress:
    """How far into one batch a sink got, so a retry of the same batch goes on where the failed write stopped."""

    def __init__(self) -> None:
        self._key: object = None
        self.rows: list[Any] = []
        self.done = 0

    def start(self, key: object, rows: Callable[[], list[Any]]) -> None:
        if key is not self._key:
            self._key, self.rows, self.done = key, rows(), 0

    def finish(self) -> None:
        self._key, self.rows, self.done = None, [], 0


class JsonlSink(SeriesSink):
    """One JSONL stream (``records``, ``items`` or ``dropped``) in rotated chunk files: the crawl's own, or a copy
    elsewhere (``--items-to jsonl:DIR``). Lines are what ``rows`` makes of a batch (the record, the items as
    ``{"url", "fetch_time", "index", "fields"}``); ``trawl export`` writes flat keyed rows (:meth:`write_rows`)."""

    def __init__(
        self,
        directory: Path,
        prefix: str,
        chunk: int,
        rows: Callable[[Sequence[PageOutput]], list[Any]],
        name: str = "",
        recipients: Sequence[Any] = (),
    ) -> None:
        seal_open_files(directory, prefix) if directory.is_dir() else None
        self.writer = JsonlWriter(directory, prefix, chunk, recipients)
        self.file = self.writer.series
        self.file.hold = True  # a full file is sealed by commit(), once its batch is completed
        self.name = name or str(directory)
        self._rows = rows
        self._progress = _Progress()

    def write(self, batch: Sequence[PageOutput]) -> None:
        self._write(batch, lambda: self._rows(batch))

    def write_rows(self, rows: Rows) -> None:
        self._write(rows, lambda: rows.rows)

    def _write(self, key: object, rows: Callable[[], list[Any]]) -> None:
        progress = self._progress
        progress.start(key, rows)
        while progress.done < len(progress.rows):  # one write() per chunk file the rows span
            progress.done += self.writer.write_some(progress.rows[progress.done :])
        progress.finish()


def records_of(batch: Sequence[PageOutput]) -> list[Any]:
    return [out.record for out in batch]


def items_of(batch: Sequence[PageOutput]) -> list[Any]:
    return [item for out in batch for item in out.items]


def chunks_of(batch: Sequence[PageOutput]) -> list[Any]:
    return [chunk for out in batch for chunk in out.chunks]


def changes_of(batch: Sequence[PageOutput]) -> list[Any]:
    return [change for out in batch for change in out.changes]


class DroppedSink(JsonlSink):
    """The dropped-links stream: a page's drops, and (:meth:`write_drops`) the links the frontier refused."""

    def __init__(
        self, directory: Path, prefix: str, chunk: int, name: str = "", recipients: Sequence[Any] = ()
    ) -> None:
        super().__init__(directory, prefix, chunk, self._drops_of, name, recipients)
        self._recent: OrderedDict[tuple[str, str], None] = OrderedDict()

    def write_drops(self, drops: Sequence[Drop]) -> None:
        self._write(drops, lambda: self._fresh(drops))

    def _drops_of(self, batch: Sequence[PageOutput]) -> list[Any]:
        return self._fresh([drop for out in batch for drop in out.dropped])

    def _fresh(self, drops: Sequence[Drop]) -> list[Any]:
        """The drops whose (url, reason) the LRU has not seen lately."""
        recent = self._recent
        lines = []
        for drop in drops:
            key = (drop.url, drop.reason)
            if key in recent:
                recent.move_to_end(key)
                continue
            recent[key] = None
            lines.append(drop)
        while len(recent) > _DEDUP:
            recent.popitem(last=False)
        return lines


class WarcSink(SeriesSink):
    """Request/response records of every page whose output asks for them (``PageOutput.warc``), and the robots.txt
    answers any page carries (``Page.robots``)."""

    def __init__(
        self,
        directory: Path,
        prefix: str,
        max_bytes: int,
        name: str = "",
        recipients: Sequence[Any] = (),
        info: Sequence[tuple[str, str]] = (),
        crawl: str = "",
    ) -> None:
        seal_open_files(directory, prefix) if directory.is_dir() else None
        self.writer = WarcWriter(directory, prefix, max_bytes, recipients, info, crawl)
        self.file = self.writer.series
        self.file.hold = True  # a full file is sealed by commit(), once its batch is completed
        self.name = name or str(directory)
        self._progress = _Progress()

    def write(self, batch: Sequence[PageOutput]) -> None:
        progress = self._progress
        progress.start(batch, lambda: [out for out in batch if out.warc or out.page.robots])
        while progress.done < len(progress.rows):
            out = progress.rows[progress.done]
            revisit = out.record.revisit if isinstance(out.record.revisit, str) else ""
            self.writer.write_pair(out.page, out.record.content_hash, revisit, pair=out.warc)
            progress.done += 1
        progress.finish()


def _directory(spec: SinkUrl, stream: str, ctx: SinkContext) -> Path:
    """The sink's directory: the crawl's own ``<out>/<stream>`` when the URL names none."""
    return ctx.out_dir / (spec.target or stream)


def open_jsonl(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    directory, name = _directory(spec, stream, ctx), spec.name if spec.target else ""
    if stream == "dropped":
        return DroppedSink(directory, ctx.prefix, ctx.chunk, name, ctx.recipients())
    if stream in _LINES:
        return JsonlSink(directory, ctx.prefix, ctx.chunk, _LINES[stream], name, ctx.recipients())
    raise ConfigError(f"{spec.name}: jsonl cannot hold the {stream} stream")


def open_warc(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    name = spec.name if spec.target else ""
    directory = _directory(spec, stream, ctx)
    # response ids (warc.py) are the crawl's own: its id is to the second, the stamp to the millisecond
    prefix, crawl = ctx.warc_prefix(), ctx.crawl_id + ctx.stamp
    return WarcSink(directory, prefix, ctx.warc_max_bytes, name, ctx.recipients(), ctx.warcinfo, crawl)


_LINES = {"records": records_of, "items": items_of, "chunks": chunks_of, "changes": changes_of}
