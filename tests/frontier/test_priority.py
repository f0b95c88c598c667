"""Priority: seeds and sitemap URLs (depth 0) first, then shallower before deeper, within a host and across hosts."""

from __future__ import annotations

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import actual, complete, drain, elapse, host_key, host_state, queue, release
from webtrawl.formats.recrawl import RecrawlState
from webtrawl.frontier import Release, UrlAction
from webtrawl.frontier.keys import split_url
from webtrawl.frontier.redis_frontier import RedisFrontier
from webtrawl.messages import Completion, Lease, NewUrl


def test_a_host_leases_its_shallowest_url_first_and_fifo_within_a_depth(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add([NewUrl("http://a.test/d5", 5), NewUrl("http://a.test/d2", 2), NewUrl("http://a.test/d3", 3)])
    f.add([NewUrl("http://a.test/seed", 0), NewUrl("http://a.test/d1", 1), NewUrl("http://a.test/d2b", 2)])
    urls = [x.url.rsplit("/", 1)[1] for x in drain(f)]
    # levels 0, 1, 2, then everything at depth 3 or more in the order it came
    assert urls == ["seed", "d1", "d2", "d2b", "d5", "d3"]


def test_across_hosts_the_host_with_the_best_url_is_leased_first(frontier: FrontierFactory) -> None:
    f = frontier(shards=1)  # one shard: one lease call sees every ready host
    f.add([NewUrl("http://deep.test/x", 4), NewUrl("http://mid.test/x", 1), NewUrl("http://top.test/x", 0)])
    assert [x.host for x in _one_at_a_time(f)] == ["top.test", "mid.test", "deep.test"]


def test_a_waiting_host_moves_up_when_a_better_url_arrives(frontier: FrontierFactory) -> None:
    f = frontier(shards=1)
    f.add([NewUrl("http://a.test/deep", 3), NewUrl("http://b.test/mid", 2)])
    f.add([NewUrl("http://a.test/new-seed", 0)])  # a.test had only a depth-3 URL: now it has the best one
    leases = _one_at_a_time(f)
    assert [x.url for x in leases] == ["http://a.test/new-seed", "http://b.test/mid", "http://a.test/deep"]


def test_urls_put_back_keep_their_level(frontier: FrontierFactory) -> None:
    f = frontier(shards=1)
    f.add([NewUrl("http://a.test/seed", 0), NewUrl("http://a.test/deep", 3)])
    (x,) = f.lease("n/f0", 1)
    release(f, [x], UrlAction.HEAD)  # e.g. robots.txt had to come first
    (again,) = f.lease("n/f0", 1)
    assert again.url == "http://a.test/seed"
    assert f.reclaim_owner("n/f0") == 1  # a dead fetcher's URL goes back to the head of its level
    elapse(f, "a.test")
    (third,) = f.lease("n/f1", 1)
    assert third.url == "http://a.test/seed"
    # a host session's next URL is the host's best one too
    f.add([NewUrl("http://a.test/mid", 1)])
    (held,) = f.release([Release(third.token, third.shard, third.host, hold=True)])
    assert held is not None and held.lease.url == "http://a.test/mid"
    complete(f, [third])
    release(f, [held.lease])
    complete(f, [held.lease])
    assert [y.url for y in drain(f)] == ["http://a.test/deep"]
    assert actual(f) == (0, 0)
    c = f.counters()
    assert (c.queued, c.inflight, c.ready_hosts + c.waiting_hosts) == (0, 0, 0)


def _one_at_a_time(f: RedisFrontier) -> list[Lease]:
    """Lease one host per call (fewer fetchers than ready hosts), releasing each before the next."""
    out: list[Lease] = []
    while batch := f.lease("n/f0", 1):
        release(f, batch)
        complete(f, batch)
        out += batch
    return out


def test_each_hosts_queued_count_follows_its_queues(frontier: FrontierFactory) -> None:
    f = frontier(shards=1)
    f.add([NewUrl(f"http://a.test/{i}", i % 5) for i in range(10)])
    first = f.lease("n/f0", 1)
    release(f, first, UrlAction.RETRY)
    (second,) = f.lease("n/f0", 1)
    assert f.reclaim_owner("n/f0") == 1
    assert int(host_state(f, "a.test")["q"]) == len(queue(f, "a.test")) == 10
    # a crawl from before the count: add counts the host's queues once
    f.client.hdel(host_key(f, "a.test", "h"), "q")
    f.add([NewUrl("http://a.test/new", 1)])
    assert int(host_state(f, "a.test")["q"]) == len(queue(f, "a.test")) == 11
    del second


def test_a_crawl_from_before_the_queued_count_loses_no_url(frontier: FrontierFactory) -> None:
    """Hosts without q (queued before the count existed) are leased, put back and leased again, then counted."""
    f = frontier(shards=1)
    f.add([NewUrl(f"http://a.test/{i}", 2) for i in range(3)])
    f.client.hdel(host_key(f, "a.test", "h"), "q")
    (x,) = f.lease("n/f0", 1)
    release(f, [x], UrlAction.HEAD)
    assert "q" not in host_state(f, "a.test")
    assert len(drain(f)) == 3
    f.add([NewUrl("http://a.test/new", 2)])
    assert host_state(f, "a.test")["q"] == "1" and [y.url for y in drain(f)] == ["http://a.test/new"]


def test_a_url_given_a_priority_is_leased_at_that_level_and_keeps_it(frontier: FrontierFactory) -> None:
    """A rule's or callback's priority: a deep URL ranked 0 goes before the host's ordinary links, also after a
    retry puts it back, and a shallow URL ranked 3 after them; the entry costs two bytes more, only when ranked."""
    f = frontier(shards=1)
    f.add([NewUrl("http://a.test/d1", 1), NewUrl("http://a.test/d1b", 1), NewUrl("http://a.test/d2", 2)])
    f.add([NewUrl("http://a.test/deep", 5, 0, 0), NewUrl("http://a.test/late", 1, 0, 3)])
    assert sorted(queue(f, "a.test")) == ["1/d1", "1/d1b", "1~3/late", "2/d2", "5~0/deep"]
    (x,) = f.lease("n/f0", 1)
    assert (x.url, x.depth) == ("http://a.test/deep", 5)
    release(f, [x], UrlAction.RETRY)
    elapse(f, "a.test")
    (again,) = f.lease("n/f0", 1)
    assert (again.url, again.retries) == ("http://a.test/deep", 1)
    release(f, [again])
    complete(f, [again])
    assert [y.url.rsplit("/", 1)[1] for y in drain(f)] == ["d1", "d1b", "d2", "late"]


def test_a_round_leases_the_pages_due_for_a_recheck_before_new_links(frontier: FrontierFactory) -> None:
    """With --max-pages per round, what the cap leaves unfetched must be new links, not rechecks of known pages:
    a round's due pages come before the links queued at any depth, those a capped round left and those it finds."""
    f = frontier(shards=1)
    known = {"http://a.test/": 0, "http://a.test/deep/page": 2}
    f.add([NewUrl(url, depth) for url, depth in known.items()])
    while batch := f.lease("n/f0", 100):
        release(f, batch)
        for x in batch:
            parts = split_url(x.url)
            assert parts is not None
            state = RecrawlState(x.host, x.depth, parts.origin, parts.rest, 1000, date="2026-11-02T10:00:00.000Z")
            f.complete([Completion(x.token, x.shard, {}, x.url, state.encode(), 0)])
    f.add([NewUrl("http://a.test/left", 1)])  # a link the last round's cap left queued
    assert f.requeue_due() == 2
    f.add([NewUrl("http://a.test/found", 1)])  # a link the round finds
    assert [x.url for x in drain(f)] == [*known, "http://a.test/left", "http://a.test/found"]
