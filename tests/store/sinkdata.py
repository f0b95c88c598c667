"""Batches as a parser hands them to its sinks: pages with their records and items."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from webtrawl.messages import Lease, Page
from webtrawl.store import Item, PageOutput, PageRecord, Sink, SinkContext
from webtrawl.store.batchlog import Marked

FETCH_TIME = "2026-11-23T18:00:00.000Z"


def page(url: str, items: list[dict[str, Any]] | None = None, **record: Any) -> PageOutput:
    lease = Lease(token="n/p0.1", shard=0, host=url.split("/")[2], url=url)
    rec = PageRecord(url=url, final_url=url, status=200, fetch_time=FETCH_TIME, title=f"T {url}", **record)
    found = [Item(url=url, fetch_time=FETCH_TIME, index=i, fields=f) for i, f in enumerate(items or [])]
    return PageOutput(page=Page(lease=lease, status=200), record=rec, items=found)


def products(url: str, n: int, **extra: Any) -> PageOutput:
    """A page with ``n`` product items (name, price, sku, in_stock, tags)."""
    fields = [
        {"name": f"P{i} of {url}", "price": 10 + i + 0.5, "sku": i, "in_stock": i % 2 == 0, "tags": ["a", i], **extra}
        for i in range(n)
    ]
    return page(url, fields)


def ctx(out: Path, crawl: str = "wt-1700000000", prefix: str = "n-p0", chunk: int = 10_000) -> SinkContext:
    return SinkContext(out_dir=out, prefix=prefix, crawl_id=crawl, chunk=chunk)


def store(sink: Sink, batch: Sequence[PageOutput]) -> None:
    """What a parser's batch does with a sink: write, flush, and once the batch is completed, commit (a file sink
    seals the files the batch filled only then)."""
    sink.write(batch)
    sink.flush()
    if isinstance(sink, Marked):
        sink.commit()
