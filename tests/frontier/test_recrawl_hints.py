"""Sitemap hints in the recrawl set (hint.lua): a first interval for URLs not fetched yet, and a lastmod after the
copy we hold queues a fetched URL again, once, and only if it is not queued or in flight already."""

from __future__ import annotations

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import drain, release
from webtrawl.formats.recrawl import RecrawlState
from webtrawl.frontier.keys import shard_tag, split_url
from webtrawl.frontier.redis_frontier import RedisFrontier
from webtrawl.messages import Completion, NewUrl, RecrawlHint

FETCHED = "2026-11-02T10:00:00.000Z"
FAR = 10**15  # due in ~30,000 years: only a hint can make it due


def _fetch_into_recrawl_set(f: RedisFrontier, urls: list[str]) -> None:
    """Lease and fetch each URL once; its completion puts it in the recrawl set, fetched at FETCHED."""
    f.add([NewUrl(u) for u in urls])
    while batch := f.lease("n/f0", 100):
        release(f, batch)
        for lease in batch:
            parts = split_url(lease.url)
            assert parts is not None
            state = RecrawlState(lease.host, 0, parts.origin, parts.rest, 1000, date=FETCHED).encode()
            f.complete([Completion(lease.token, lease.shard, {}, lease.url, state, FAR)])


def _rc(f: RedisFrontier, url: str) -> str | None:
    value = f.client.hget(shard_tag(f.core.settings.prefix, f.shard_of("a.test")) + "rc", url)
    return value.decode() if isinstance(value, bytes) else value


def test_lastmod_after_the_copy_held_queues_the_url_again_and_changefreq_waits_for_the_first_fetch(
    frontier: FrontierFactory,
) -> None:
    f = frontier(shards=1)
    new, old = "http://a.test/x1", "http://a.test/x2"
    _fetch_into_recrawl_set(f, [new, old])
    assert drain(f) == []  # both wait in the due set, far in the future
    unseen = "http://a.test/x3"
    queued = f.recrawl_hints(
        [
            RecrawlHint(new, 0, "2026-11-03T00:00:00.000Z"),  # changed after our fetch
            RecrawlHint(old, 0, "2026-11-01T00:00:00.000Z"),  # not since
            RecrawlHint(unseen, 3_600_000, ""),  # never fetched: its first interval
        ]
    )
    assert queued == 1
    assert _rc(f, unseen) == "~3600000" and _rc(f, old).startswith("a.test\n")  # type: ignore[union-attr]
    # queued or in flight already: the same hint again does not queue it twice
    assert f.recrawl_hints([RecrawlHint(new, 0, "2026-11-03T00:00:00.000Z")]) == 0
    assert [x.url for x in drain(f)] == [new]
    assert f.counters().get("recrawl-lastmod") == 1


def test_a_lastmod_before_a_304_since_the_copy_does_not_queue_the_url_again(frontier: FrontierFactory) -> None:
    """The copy held is from FETCHED; a 304 at a later time confirmed it. A sitemap lastmod between the two says
    nothing the 304 did not: the URL must not be fetched again at every read of the sitemap."""
    f = frontier(shards=1)
    url = "http://a.test/x1"
    f.add([NewUrl(url)])
    (lease,) = f.lease("n/f0", 100)
    release(f, [lease])
    parts = split_url(lease.url)
    assert parts is not None
    confirmed = "2026-11-05T10:00:00.000Z"
    state = RecrawlState(lease.host, 0, parts.origin, parts.rest, 1000, date=FETCHED, checked=confirmed).encode()
    f.complete([Completion(lease.token, lease.shard, {}, lease.url, state, FAR)])
    assert f.recrawl_hints([RecrawlHint(url, 0, "2026-11-03T00:00:00.000Z")]) == 0
    assert f.recrawl_hints([RecrawlHint(url, 0, "2026-11-06T00:00:00.000Z")]) == 1  # changed since the 304


def test_a_newer_lastmod_does_not_queue_again_a_page_whose_failure_is_kept(frontier: FrontierFactory) -> None:
    """The sitemap says the page changed after the copy held; the page was fetched for that and failed (its retries
    used up, kept for trawl requeue). Each later read of the sitemap (it changes, so it is read again) says the same:
    that is no reason to ask again before its round does, or trawl requeue."""
    f = frontier(shards=1)
    url = "http://a.test/x1"
    _fetch_into_recrawl_set(f, [url])
    lastmod = "2026-11-03T00:00:00.000Z"
    assert f.recrawl_hints([RecrawlHint(url, 0, lastmod)]) == 1
    (lease,) = f.lease("n/f0", 100)
    release(f, [lease])
    state = _rc(f, url)
    assert state is not None
    f.complete([Completion(lease.token, lease.shard, {}, url, state, FAR, failed="timeout")])
    assert f.counters().get("failed-kept") == 1
    assert f.recrawl_hints([RecrawlHint(url, 0, lastmod)]) == 0  # the next read of the sitemap
    assert drain(f) == []
    assert f.requeue_failed() == 1  # it is still there for trawl requeue
    assert [x.url for x in drain(f)] == [url]
