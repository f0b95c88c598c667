"""The record of a fetched (or refused) page before parsing: what the fetcher knows of it."""

from __future__ import annotations

import time

from webtrawl.formats.recrawl import warc_date
from webtrawl.messages import Page
from webtrawl.store.base import PageRecord


def _iso(ts: float) -> str:
    """The record's ``fetch_time``: the WARC-Date of the page's records (what a revisit refers to)."""
    return warc_date(ts if ts > 0 else time.time())


def base_record(page: Page) -> PageRecord:
    """The record of ``page`` before parsing: what the fetcher knows (also the parse-bug record's shape)."""
    lease = page.lease
    record = PageRecord(
        url=lease.url,
        final_url=lease.url,
        status=page.status,
        bytes=len(page.body),
        fetch_time=_iso(page.fetch_time),
        elapsed_ms=round(page.elapsed_ms, 1),
        depth=lease.depth,
        hops=lease.hops,
        retries=lease.retries,
        ip=page.ip,
        truncated=page.truncated,
    )
    if page.dom is not None:
        record.rendered = True
        record.render_reason = page.render_reason
        record.render_requests = 1 + len(page.exchanges)
        record.render_blocked = dict(page.render_blocked)
    elif page.render_blocked:  # to be rendered, and kept as fetched (render-too-big: fetch/render/fetcher.py)
        record.rendered = False
        record.render_blocked = dict(page.render_blocked)
    return record
