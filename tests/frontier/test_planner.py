"""lease() asks the shards likely to have work, and does not hammer Redis when there is none."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import new_urls, release
from webtrawl.frontier import AsyncRedisFrontier, RedisFrontier, connect_async, connect_sync
from webtrawl.frontier.keys import ready_channel
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


def test_a_resting_fetcher_hears_at_once_what_another_process_added(frontier: FrontierFactory, redis_url: str) -> None:
    parser = frontier(shards=16, empty_poll_ms=3_600_000)

    async def fetcher() -> tuple[float, list[str], float]:
        client = await connect_async(redis_url)
        f = await AsyncRedisFrontier.open(client, parser.core.settings)
        assert await f.lease("n/f0", 32) == []
        assert f.next_lease_in() > 3000  # every shard rests for the hour: a poll would not find the new host
        woken = asyncio.Event()
        watch = asyncio.create_task(f.watch_ready(woken.set))
        channel = ready_channel(parser.core.settings.prefix)
        while (await client.pubsub_numsub(channel))[0][1] < 1:  # until Redis serves the watch's SUBSCRIBE
            await asyncio.sleep(0)
        await client.publish(channel, b"not an add's hint\n12")
        await asyncio.wait_for(woken.wait(), 60)  # a guard against a hang, not a speed threshold
        still_resting = f.next_lease_in()  # a message that is not add.lua's changes nothing
        woken.clear()
        parser.add(new_urls("http://a.test/1"))
        await asyncio.wait_for(woken.wait(), 60)
        due_in = f.next_lease_in()
        leased = [x.url for x in await f.lease("n/f0", 32)]
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        await client.aclose()
        return still_resting, leased, due_in

    still_resting, leased, due_in = asyncio.run(fetcher())
    assert still_resting > 3000
    assert due_in == 0
    assert leased == ["http://a.test/1"]


def test_a_user_whose_acl_grants_no_channels_still_adds(
    frontier: FrontierFactory, redis_client: redis.Redis, redis_url: str
) -> None:
    settings = frontier().core.settings
    user = f"nochannels-{uuid.uuid4().hex[:8]}"
    redis_client.acl_setuser(user, enabled=True, nopass=True, keys=["*"], commands=["+@all"], reset_channels=True)
    client = connect_sync(redis_url, username=user, password="")
    try:
        with pytest.raises(redis.exceptions.NoPermissionError):
            client.publish("any", "x")  # what the add's hint to the fetchers would have met
        f = RedisFrontier.open(client, settings)
        assert f.add(new_urls("http://a.test/1", "http://b.test/1")).added == 2

        async def listen() -> None:  # a fetcher of that user: no channel to listen on, it polls
            fetcher = await connect_async(redis_url, username=user, password="")
            await (await AsyncRedisFrontier.open(fetcher, settings)).watch_ready(lambda: None)
            await fetcher.aclose()

        asyncio.run(listen())
    finally:
        client.close()
        redis_client.acl_deluser(user)


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
