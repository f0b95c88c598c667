"""The asyncio frontier runs the same steps as the sync one, on the same data."""

from __future__ import annotations

import asyncio

import redis

from tests.fixtures.redis_fixtures import FrontierFactory
from webtrawl.frontier import AsyncRedisFrontier, Release, UrlAction, connect_async
from webtrawl.frontier.scripts import SCRIPTS
from webtrawl.messages import Completion, NewUrl


def test_async_frontier_shares_the_crawl_with_a_sync_one(
    frontier: FrontierFactory, redis_url: str, redis_client: redis.Redis
) -> None:
    sync = frontier()

    async def fetcher() -> list[str]:
        client = await connect_async(redis_url)
        f = await AsyncRedisFrontier.open(client, sync.core.settings)
        assert f.meta() == sync.meta()
        assert (await f.add([NewUrl("http://a.test/1"), NewUrl("http://a.test/2")])).added == 2
        urls = []
        while leases := await f.lease("n/f0", 4):
            await f.release([Release(x.token, x.shard, x.host, UrlAction.KEEP, delay_ms=0) for x in leases])
            assert await f.complete([Completion(x.token, x.shard, {"stored": 1}) for x in leases]) == [None] * len(
                leases
            )
            urls += [x.url for x in leases]
        await f.set_robots("http://a.test", b"robots", 60)
        assert await f.add_seed_hosts(["a.test"]) == 1
        assert await f.reclaim_expired() == 0 and await f.reclaim_owner("n") == 0
        assert await f.is_finished()
        await client.aclose()
        return urls

    assert asyncio.run(fetcher()) == ["http://a.test/1", "http://a.test/2"]
    assert sync.counters().get("stored") == 2
    assert sync.get_robots("http://a.test") == b"robots"
    assert sync.seed_hosts() == {"a.test"}
    assert sync.add([NewUrl("http://a.test/2")]).seen == 1


def test_async_frontier_reloads_scripts_after_a_script_flush(frontier: FrontierFactory, redis_url: str) -> None:
    settings = frontier().core.settings

    async def run() -> int:
        client = await connect_async(redis_url)
        f = await AsyncRedisFrontier.open(client, settings)
        await client.script_flush()
        added = (await f.add([NewUrl("http://a.test/")])).added
        await client.aclose()
        return added

    assert asyncio.run(run()) == 1


def test_sync_frontier_reloads_scripts_after_a_script_flush(frontier: FrontierFactory) -> None:
    f = frontier()
    f.client.script_flush()
    assert f.add([NewUrl("http://a.test/")]).added == 1
    assert all(f.client.script_exists(*[s.sha for s in SCRIPTS.values()]))
