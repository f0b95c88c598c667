"""The record of a fetched (or refused) page before parsing: what the fetcher knows of it."""

from __future__ import annotations

import functools
import time

from webtrawl.messages import Page
from webtrawl.store.base import PageRecord


def _iso(ts: float) -> str:
    ts = ts if ts > 0 else time.time()
    return _utc_second(int(ts)) + f".{int(ts * 1000) % 1000:03d}Z"


@functools.lru_cache(maxsize=8)
def _utc_second(second: int) -> str:
    """The pages of a batch were fetched within a few seconds: ``strftime`` once per second, not per page."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


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
