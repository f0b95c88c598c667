"""``jsonl:DIR``: items or page records as JSON lines in rotated files, like the crawl's own ``items/`` and
``records/`` (one flat object per row: the key columns, then the fields)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from webtrawl.store.base import PageOutput, SinkContext
from webtrawl.store.jsonl import JsonlWriter
from webtrawl.store.sinks.rows import RowMaker, Rows, What


class JsonlSink:
    def __init__(self, directory: Path, what: What, ctx: SinkContext, name: str) -> None:
        self.name = name
        self.rows = RowMaker(what, ctx.crawl_id)
        self.writer = JsonlWriter(directory, ctx.prefix, ctx.chunk, ctx.recipients())

    def write(self, batch: Sequence[PageOutput]) -> None:
        self.write_rows(self.rows(batch))

    def write_rows(self, rows: Rows) -> None:
        lines = rows.rows
        while lines:  # one write per chunk file the lines span
            lines = lines[self.writer.write_some(lines) :]

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
