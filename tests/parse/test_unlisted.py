"""A page its sitemap no longer lists is ``gone`` once (its chunks tombstoned), stays quiet while unlisted, and is
``new`` again after a sitemap lists it again; a sitemap read in part is not compared. Real Redis holds the states."""

from __future__ import annotations

import uuid

import pytest
import redis

from webtrawl.messages import Lease, NewUrl, Page
from webtrawl.parse.process import Processed
from webtrawl.parse.sitemap import TEXT
from webtrawl.parse.tracking import ContentTracker
from webtrawl.store.base import PageRecord

SITEMAP = "https://shop.example/sitemap.xml"
A, B = "https://shop.example/a", "https://shop.example/b"


def _page(url: str) -> Page:
    return Page(lease=Lease(token=f"t.{url}", shard=0, host="shop.example", url=url), status=200)


def _sitemap(when: str, *urls: str, capped: bool = False, kind: str = "urlset") -> tuple[Page, Processed]:
    record = PageRecord(url=SITEMAP, final_url=SITEMAP, status=200, fetch_time=when, sitemap=kind)
    counters = {"sitemaps": 1, **({"sitemaps-capped": 1} if capped else {})}
    return _page(SITEMAP), Processed(record, [NewUrl(url) for url in urls], counters, True)


def _content(url: str, when: str) -> tuple[Page, Processed]:
    text = f"The page {url[-1]} has a paragraph of its own."
    record = PageRecord(url=url, final_url=url, status=200, fetch_time=when, text=text, markdown=f"# {url}\n\n{text}")
    return _page(url), Processed(record, [], {}, True)


def _round(tracker: ContentTracker, *batch: tuple[Page, Processed]) -> list[Processed]:
    tracker.save(tracker.apply(list(batch)))
    return [out for _, out in batch]


@pytest.mark.parametrize("kind", ["urlset", TEXT])  # an XML sitemap and a text one (one URL per line)
def test_a_page_dropped_from_its_sitemap_is_gone_once_then_new_when_listed_again(
    redis_client: redis.Redis, kind: str
) -> None:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    tracker = ContentTracker(redis_client, prefix, chunk_size=200, changes=True, keep_state=True, announce_new=True)
    first = _round(tracker, _sitemap("T1", A, B, kind=kind), _content(A, "T1"), _content(B, "T1"))
    assert first[0].changes == [] and first[0].chunks == [], "the first read is the baseline"
    b_chunks = {row.chunk_id for row in first[2].chunks}

    sitemap, a, b = _round(tracker, _sitemap("T2", A, kind=kind), _content(A, "T2"), _content(B, "T2"))
    assert [(c.url, c.change, c.previous_fetch_time) for c in sitemap.changes] == [(B, "gone", "T1")]
    assert {row.chunk_id for row in sitemap.chunks} == b_chunks and all(row.deleted for row in sitemap.chunks)
    assert sitemap.counters["changes-gone"] == 1 and sitemap.counters["chunks"] == len(b_chunks)
    assert a.changes == b.changes == [] and a.chunks == b.chunks == []

    again = _round(tracker, _sitemap("T3", A, "https://shop.example/c", kind=kind), _content(B, "T3"))
    assert all(out.changes == [] and out.chunks == [] for out in again), "announced once; b quiet while unlisted"
    capped = _round(tracker, _sitemap("T4", "https://shop.example/c", capped=True, kind=kind))
    assert capped[0].changes == [], "a sitemap read in part is not compared (nor kept)"

    (relisted,) = _round(tracker, _sitemap("T5", A, B, kind=kind))
    assert relisted.changes == []
    (b,) = _round(tracker, _content(B, "T6"))
    assert [c.change for c in b.changes] == ["new"] and {row.chunk_id for row in b.chunks} == b_chunks
