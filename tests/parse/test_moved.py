"""A page held that now answers a permanent redirect (301, 308) is ``gone`` at its URL: its chunks are tombstoned
(the content is at the target now, tracked under the target's URL), and if it answers 200 again it is ``new``. A
temporary redirect (302, 303, 307) says nothing about the page: no rows. Real Redis holds the states."""

from __future__ import annotations

import uuid

import pytest
import redis

from webtrawl.messages import Lease, Page
from webtrawl.parse.process import Processed
from webtrawl.parse.tracking import ContentTracker
from webtrawl.store.base import PageRecord

URL = "https://shop.example/old-guide"
TARGET = "https://shop.example/guide"
TEXT = "The guide has a paragraph of its own."


def _fetch(when: str, status: int) -> tuple[Page, Processed]:
    page = Page(lease=Lease(token=f"t.{when}", shard=0, host="shop.example", url=URL), status=status)
    if status == 200:
        record = PageRecord(url=URL, final_url=URL, status=200, fetch_time=when, text=TEXT, markdown=f"# G\n\n{TEXT}")
    else:
        record = PageRecord(url=URL, final_url=TARGET, status=status, fetch_time=when, redirect=TARGET)
    return page, Processed(record, [], {}, True)


def _round(tracker: ContentTracker, when: str, status: int) -> Processed:
    page, out = _fetch(when, status)
    tracker.save(tracker.apply([(page, out)]))
    return out


@pytest.mark.parametrize("status", [301, 308])
def test_a_page_that_moved_for_good_is_gone_then_new_if_it_comes_back(redis_client: redis.Redis, status: int) -> None:
    tracker = ContentTracker(
        redis_client, f"t{uuid.uuid4().hex[:12]}", chunk_size=200, changes=True, keep_state=True, announce_new=True
    )
    first = _round(tracker, "T1", 200)
    moved = _round(tracker, "T2", status)
    assert [(c.change, c.previous_fetch_time) for c in moved.changes] == [("gone", "T1")]
    assert "-The guide has a paragraph of its own." in moved.changes[0].text_diff
    assert {r.chunk_id for r in moved.chunks} == {r.chunk_id for r in first.chunks} and all(
        r.deleted for r in moved.chunks
    )
    assert _round(tracker, "T3", status).changes == [], "said once"
    back = _round(tracker, "T4", 200)
    assert [c.change for c in back.changes] == ["new"] and [r.text for r in back.chunks] == [TEXT]


@pytest.mark.parametrize("status", [302, 303, 307])
def test_a_temporary_redirect_says_nothing(redis_client: redis.Redis, status: int) -> None:
    tracker = ContentTracker(
        redis_client, f"t{uuid.uuid4().hex[:12]}", chunk_size=200, changes=True, keep_state=True, announce_new=True
    )
    _round(tracker, "T1", 200)
    assert _round(tracker, "T2", status).changes == []
    again = _round(tracker, "T3", 200)
    assert again.changes == [] and again.chunks == []
