"""lease() asks the shards likely to have work, and does not hammer Redis when there is none."""

from __future__ import annotations

import redis

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import new_urls, release
from webtrawl.frontier.planner import LeasePlanner


def _evalsha_calls(client: redis.Redis) -> int:
    stats = client.info("commandstats").get("cmdstat_evalsha", {"calls": 0})
    return int(stats["calls"])


def test_an_empty_frontier_is_not_asked_again_before_the_poll_interval(
    frontier: FrontierFactory, redis_client: redis.Redis
) -> None:
    f = frontier(shards=16, empty_poll_ms=3_600_000)
    assert f.lease("n/f0", 32) == []
    assert f.next_lease_in() > 3000
    before = _evalsha_calls(redis_client)
    assert f.lease("n/f0", 32) == []
    assert _evalsha_calls(redis_client) == before


def test_own_adds_and_releases_make_a_resting_shard_due_at_once(frontier: FrontierFactory) -> None:
    f = frontier(shards=16, empty_poll_ms=3_600_000)
    assert f.lease("n/f0", 32) == []
    f.add(new_urls("http://a.test/1", "http://a.test/2"))
    assert f.next_lease_in() == 0
    leased = f.lease("n/f0", 32)
    assert [x.url for x in leased] == ["http://a.test/1"]
    release(f, leased, delay_ms=0)
    assert [x.url for x in f.lease("n/f0", 32)] == ["http://a.test/2"]


def test_a_second_process_sees_what_the_first_added(frontier: FrontierFactory) -> None:
    first = frontier()
    second = frontier(prefix=first.core.settings.prefix)
    first.add(new_urls("http://a.test/1"))
    result = second.add(new_urls("http://a.test/1", "http://a.test/2"))
    assert (result.added, result.seen) == (1, 1)
    assert [x.url for x in second.lease("n/f0", 5)] == ["http://a.test/1"]


def test_planner_splits_the_request_over_due_shards_hot_ones_first() -> None:
    p = LeasePlanner(shards=6, per_call=3, empty_poll_s=1.0)
    p.hint(5, 0.0)
    plan = p.pick(10, now=0.0)
    assert plan[0] == (5, 4) and sum(n for _, n in plan) == 10 and len(plan) == 3
    assert p.pick(2, now=0.0, exclude={5}) == [(0, 1), (1, 1)]


def test_planner_rests_a_shard_until_its_next_ready_host_or_the_poll_interval() -> None:
    p = LeasePlanner(shards=2, per_call=2, empty_poll_s=1.0)
    p.observe(0, asked=4, got=1, server_now=10_000, earliest=10_250, now=100.0)  # next host ready in 250 ms
    p.observe(1, asked=4, got=0, server_now=10_000, earliest=-1, now=100.0)  # nothing waiting at all
    assert p.pick(4, now=100.2) == []
    assert p.pick(4, now=100.25) == [(0, 4)]
    assert p.pick(4, now=101.0) == [(0, 2), (1, 2)]
    p.observe(0, asked=2, got=2, server_now=10_000, earliest=9_000, now=101.0)  # full answer, more ready
    assert p.pick(1, now=101.0) == [(0, 1)]
