"""Adding URLs and leasing them: order, dedup, caps, one request per host."""

from __future__ import annotations

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import actual, drain, new_urls, queue, release


def test_urls_of_one_host_come_out_in_the_order_they_were_added(frontier: FrontierFactory) -> None:
    f = frontier()
    urls = [f"http://a.test/page/{i}?q={i}" for i in range(6)]
    assert f.add(new_urls(*urls)).added == 6
    assert [x.url for x in drain(f)] == urls


def test_a_host_is_never_leased_twice_at_once(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls(*[f"http://a.test/{i}" for i in range(5)], *[f"http://b.test/{i}" for i in range(5)]))
    first = f.lease("n/f0", 10)
    assert sorted(x.host for x in first) == ["a.test", "b.test"]
    assert f.lease("n/f1", 10) == []  # both hosts busy, though 8 URLs wait
    release(f, [first[0]])
    again = f.lease("n/f1", 10)
    assert [x.host for x in again] == [first[0].host]


def test_lease_carries_depth_hops_and_the_full_url_even_for_another_origin(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("https://a.test/x?y=1#", depth=3))
    f.add(new_urls("http://A.test:8080/other"))  # same politeness key, different origin
    second, first = drain(f)  # the shallower URL first (priority by depth)
    assert (first.url, first.depth, first.host) == ("https://a.test/x?y=1#", 3, "a.test")
    assert (second.url, second.depth, second.host) == ("http://A.test:8080/other", 0, "a.test")
    assert first.token.startswith("drain/f0.") and first.token != second.token


def test_a_url_is_queued_once_however_often_it_is_added(frontier: FrontierFactory) -> None:
    f = frontier()
    result = f.add(new_urls("http://a.test/1", "http://a.test/2", "http://a.test/1"))
    assert (result.added, result.seen) == (2, 1)
    assert f.add(new_urls("http://a.test/2", "http://a.test/3")).seen == 1
    drain(f)
    assert f.add(new_urls("http://a.test/1")).seen == 1  # fetched URLs stay seen
    c = f.counters()
    assert (c.get("added"), c.get("seen"), c.queued) == (3, 3, 0)


def test_host_queue_cap_drops_with_a_reason_and_frees_up_as_the_queue_drains(frontier: FrontierFactory) -> None:
    f = frontier(host_queue_cap=2)
    result = f.add(new_urls(*[f"http://a.test/{i}" for i in range(4)], "http://b.test/0"))
    assert (result.added, result.dropped) == (3, {"host-queue-cap": 2})
    assert f.counters().get("drop:host-queue-cap") == 2
    drain(f)
    # a dropped URL was not marked seen: it can get in once there is room
    assert f.add(new_urls("http://a.test/3")).added == 1


def test_host_budget_counts_every_url_ever_admitted(frontier: FrontierFactory) -> None:
    f = frontier(host_budget=3)
    assert f.add(new_urls("http://a.test/1", "http://a.test/2")).added == 2
    drain(f)
    result = f.add(new_urls("http://a.test/3", "http://a.test/4", "http://b.test/1"))
    assert (result.added, result.dropped) == (2, {"budget": 1})
    assert f.counters().get("drop:budget") == 1


def test_frontier_cap_drops_beyond_the_total_queued(frontier: FrontierFactory) -> None:
    f = frontier(frontier_cap=5)
    result = f.add(new_urls(*[f"http://h{i}.test/" for i in range(8)]))
    assert (result.added, result.dropped) == (5, {"frontier-cap": 3})
    assert f.add(new_urls("http://z.test/")).dropped == {"frontier-cap": 1}
    assert f.counters().get("drop:frontier-cap") == 4


def test_urls_that_are_not_absolute_are_dropped_and_counted(frontier: FrontierFactory) -> None:
    f = frontier()
    result = f.add(new_urls("/relative", "mailto:x@y", "http://a.test/"))
    assert (result.added, result.dropped) == (1, {"bad-url": 2})


def test_counters_match_the_data_after_adds_and_leases(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls(*[f"http://h{i % 7}.test/{i}" for i in range(50)]))
    leased = f.lease("n/f0", 4)
    c = f.counters()
    assert (c.queued, c.inflight) == actual(f) == (46, 4)
    assert c.get("hosts") == 7
    assert c.ready_hosts == 3 and c.waiting_hosts == 0
    assert not f.is_finished()
    assert len(queue(f, leased[0].host)) == sum(1 for i in range(50) if f"h{i % 7}.test" == leased[0].host) - 1


def test_empty_frontier_leases_nothing_and_is_finished(frontier: FrontierFactory) -> None:
    f = frontier()
    assert f.lease("n/f0", 8) == []
    assert f.is_finished()
    assert f.counters().queued == 0


def test_leasing_goes_through_all_shards_in_one_call(frontier: FrontierFactory) -> None:
    f = frontier(shards=64, shards_per_lease=4)
    hosts = [f"h{i}.test" for i in range(40)]
    f.add(new_urls(*[f"http://{h}/" for h in hosts]))
    assert len({f.shard_of(h) for h in hosts}) > 4
    assert sorted(x.host for x in f.lease("n/f0", 100)) == sorted(hosts)


def test_lease_never_hands_out_more_than_asked(frontier: FrontierFactory) -> None:
    f = frontier(shards=8)
    f.add(new_urls(*[f"http://h{i}.test/" for i in range(30)]))
    got = [len(f.lease("n/f0", 7)) for _ in range(5)]
    assert got == [7, 7, 7, 7, 2]


def test_rediscovering_an_admitted_url_is_seen_not_a_budget_or_cap_drop(frontier: FrontierFactory) -> None:
    # recent_urls=0: every add goes to Redis, as it does for a URL another parser (or node) admitted
    f = frontier(host_budget=2, recent_urls=0)
    assert f.add(new_urls("http://a.test/1", "http://a.test/2")).added == 2
    result = f.add(new_urls("http://a.test/1", "http://a.test/2", "http://a.test/3"))
    assert (result.added, result.seen, result.dropped) == (0, 2, {"budget": 1})
    assert result.refused == [("http://a.test/3", "budget")]  # only the new URL is refused
    assert (f.counters().get("drop:budget"), f.counters().get("seen")) == (1, 2)

    g = frontier(host_queue_cap=2, recent_urls=0)
    assert g.add(new_urls("http://b.test/1", "http://b.test/2")).added == 2
    result = g.add(new_urls("http://b.test/1", "http://b.test/2", "http://b.test/3"))
    assert (result.added, result.seen, result.dropped) == (0, 2, {"host-queue-cap": 1})
    assert g.counters().get("drop:host-queue-cap") == 1
    drain(g)
    assert g.add(new_urls("http://b.test/3")).added == 1  # a refused URL was not marked seen
