"""What the parser hands the store for one page: its :class:`~webtrawl.store.PageOutput`.

Writing is the store's job (:mod:`webtrawl.store.fanout`): the parser only turns a processed page into the typed
output every sink takes, and builds the record of a page the parser itself failed on (``parse-bug``).
"""

from __future__ import annotations

from webtrawl.messages import Page
from webtrawl.parse.process import Processed
from webtrawl.parse.record import base_record
from webtrawl.redact import redact
from webtrawl.store.base import Drop, Item, PageOutput

PARSE_BUG = "parse-bug"


def page_output(page: Page, processed: Processed) -> PageOutput:
    record = processed.record
    parent = page.lease.url
    depth = page.lease.depth + (0 if record.redirect else 1)
    return PageOutput(
        page=page,
        record=record,
        warc=processed.warc,
        items=[Item(parent, record.fetch_time, i, fields) for i, fields in enumerate(processed.items)],
        dropped=[Drop(url, reason, parent, depth) for url, reason in processed.dropped],
        chunks=processed.chunks,
        changes=processed.changes,
    )


def parse_bug_output(page: Page, exc: BaseException) -> PageOutput:
    """A parser bug must not lose the URL: the page gets its record (same shape as any other) and no WARC."""
    record = base_record(page)
    record.error = PARSE_BUG
    record.error_detail = redact(f"{type(exc).__name__}: {exc}")[:500]
    return PageOutput(page=page, record=record, warc=False)
