"""Parsers fence like fetchers (issue 22), on a real Redis: a page a parser held past its --process-ttl is taken
back, fetched again and stored by another node; the late parser then drops its copy unstored, and a completion of it
that comes anyway is discarded by complete.lua, so the records hold the URL once and no completion ends another
fetch's work."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import msgspec
import pytest

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import new_urls, release
from tests.parse.helpers import RecordingSink, make_ctx, make_page
from webtrawl.config import DiscoveryOptions, load
from webtrawl.errors import InputError
from webtrawl.frontier import STALE, RedisFrontier
from webtrawl.messages import Completion, Page
from webtrawl.parse.batch import PageBatches
from webtrawl.parse.fence import check_process_ttl, keep_margin
from webtrawl.store import FanOut, PageOutput

URL = "http://site.example/a"


def _fetched(f: RedisFrontier, owner: str) -> Page:
    """What a fetcher does: lease the host, release it with the URL kept for the parsers, and hand on the page with
    its deadline counted from before the release was sent."""
    (lease,) = f.lease(owner, 1)
    asked = time.monotonic()
    release(f, [lease])
    page = make_page(b'<title>t</title><a href="/next">next</a>', url=lease.url)
    ttl = f.core.settings.process_ttl_ms / 1000
    return msgspec.structs.replace(page, lease=lease, keep_until=asked + ttl)


def _parse(f: RedisFrontier, page: Page) -> RecordingSink:
    """One parser's batch of ``page`` into a sink of its own."""
    sink = RecordingSink([])
    margin = keep_margin(f.core.settings.process_ttl_ms / 1000)
    PageBatches(DiscoveryOptions(), make_ctx(), f, FanOut([sink], streams={"records"}), keep_margin=margin).process(
        [page]
    )
    return sink


def test_a_page_held_past_its_ttl_is_fetched_again_and_stored_once(
    frontier: FrontierFactory, caplog: pytest.LogCaptureFixture
) -> None:
    late = frontier(process_ttl_ms=0)  # this node's pages must be stored at once: its parser stalls past that
    other = frontier(prefix=late.core.settings.prefix, process_ttl_ms=600_000)
    late.add(new_urls(URL))
    stalled = _fetched(late, "n1/f0")
    assert other.reclaim_expired() == 1  # the other node's supervisor takes the URL back
    again = _fetched(other, "n2/f0")  # and fetches it again
    assert (again.lease.url, again.lease.token != stalled.lease.token) == (URL, True)
    stored = _parse(other, again)
    with caplog.at_level(logging.WARNING, logger="webtrawl.parse"):
        dropped = _parse(late, stalled)  # the stalled parser goes on
    assert dropped.outputs == [] and dropped.log == []  # nothing written
    assert "dropped 1 page(s) unstored: held past --process-ttl" in caplog.text
    assert [out.record.url for out in stored.outputs + dropped.outputs] == [URL]
    # had it sent its completion all the same, the completion script would have discarded it
    assert late.complete([Completion(stalled.lease.token, stalled.lease.shard, {"stored": 1})]) == [STALE]
    c = other.counters()
    assert (c.get("stored"), c.get("stale-complete"), c.get("reclaimed"), c.inflight) == (1, 1, 1, 0)
    assert c.queued == 1  # /next, added once


def test_a_completion_that_comes_too_late_anyway_is_discarded_and_said(
    frontier: FrontierFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """The parser's check passed, then its outputs waited (a full disk) while the URL was taken back, fetched again
    and completed by another node: the late completion ends nothing, and the parser says so."""
    late = frontier(process_ttl_ms=0)
    other = frontier(prefix=late.core.settings.prefix, process_ttl_ms=600_000)
    late.add(new_urls(URL))
    stalled = msgspec.structs.replace(_fetched(late, "n1/f0"), keep_until=0.0)  # no deadline seen: the check passes
    meanwhile: list[RecordingSink] = []

    class SlowSink(RecordingSink):
        def write(self, batch: Sequence[PageOutput]) -> None:
            super().write(batch)
            assert other.reclaim_expired() == 1
            meanwhile.append(_parse(other, _fetched(other, "n2/f0")))

    sink = SlowSink([])
    with caplog.at_level(logging.WARNING, logger="webtrawl.parse"):
        PageBatches(DiscoveryOptions(), make_ctx(), late, FanOut([sink], streams={"records"})).process([stalled])
    assert "1 completion(s) discarded: their URLs had been taken back" in caplog.text
    assert [out.record.url for out in meanwhile[0].outputs] == [URL]
    c = other.counters()
    assert (c.get("stored"), c.get("stale-complete"), c.inflight, c.queued) == (1, 1, 0, 1)


def test_a_process_ttl_no_page_could_be_stored_within_is_refused() -> None:
    check_process_ttl(load({"process_ttl": "6"}, env={}))
    with pytest.raises(InputError, match=r"--process-ttl 0.5 is too short: .* \(at least 2s\)"):
        check_process_ttl(load({"process_ttl": "0.5"}, env={}))
