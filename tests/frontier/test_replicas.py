"""--redis-replicas N: the parsers' add calls are followed by WAIT N on each master they wrote to (same connection),
so a page's links are on N replicas before the page is completed, and the fetchers' lease and release calls too, so
a lease is on them before its fetch starts; a replica that does not answer in time is one log line, not a stuck
crawl."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
import redis
import redis.cluster

import webtrawl.frontier.replicas as barrier
from tests.fixtures.redis_fixtures import TEST_SETTINGS, FrontierFactory
from tests.frontier.helpers import new_urls
from webtrawl.config import load
from webtrawl.fetch.args import redis_pool_size
from webtrawl.fetch.fence import Fence
from webtrawl.frontier import (
    AsyncRedisFrontier,
    FrontierSettings,
    Held,
    RedisFrontier,
    Release,
    UrlAction,
    connect_async,
    connect_sync,
)
from webtrawl.frontier.replicas import replicas_of, replicas_of_async
from webtrawl.frontier.retry import Outage
from webtrawl_testweb.local_cluster import LocalRedisCluster


@pytest.fixture(autouse=True)
def _fresh_acks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The barrier's memory of short masters and of its last line is per process: a WAIT that fell short in an
    earlier test (a fresh replica not yet synced, a loaded machine) would skip this test's WAIT or its line."""
    monkeypatch.setattr(barrier, "_short_until", {})


def _waits(port: int) -> int:
    client = redis.Redis(port=port)
    try:
        return int(client.info("commandstats").get("cmdstat_wait", {}).get("calls", 0))
    finally:
        client.close()


def test_adds_wait_for_the_replicas_of_every_master_they_wrote_to(replicated_cluster: LocalRedisCluster) -> None:
    client = connect_sync(replicated_cluster.url, cluster=True)
    f = RedisFrontier.open(client, FrontierSettings(**{**TEST_SETTINGS, "shards": 16}))
    assert (replicas_of(client, -1), replicas_of(client, 0), replicas_of(client, 2)) == (1, 0, 2)  # auto: 1 each
    masters = replicated_cluster.ports[: replicated_cluster.masters]
    before = [_waits(port) for port in masters]
    f.add(new_urls(*(f"http://h{i}.test/" for i in range(200))))  # no barrier by default
    assert [_waits(port) for port in masters] == before
    f.replicas = 1
    result = f.add(new_urls(*(f"http://h{i}.test/" for i in range(200, 400))))
    assert result.added == 200
    assert all(after > was for after, was in zip([_waits(port) for port in masters], before, strict=True))
    client.close()


def test_a_replica_that_is_not_there_costs_a_timeout_and_one_line(
    frontier: FrontierFactory, caplog: pytest.LogCaptureFixture
) -> None:
    f = frontier()  # the session's single server: no replica
    assert replicas_of(f.client, -1) == 0  # auto: no barrier
    assert (
        load({}, env={}).frontier.redis_replicas
        == -1
        == load({"redis_replicas": "auto"}, env={}).frontier.redis_replicas
    )
    f.replicas = 1
    with caplog.at_level(logging.INFO, logger="webtrawl.frontier"):
        assert f.add(new_urls("http://a.test/1")).added == 1
    assert "only 0 of 1 Redis replicas acknowledged" in caplog.text


def test_a_fetchers_leases_and_releases_wait_for_the_replicas_of_every_master_they_wrote_to(
    replicated_cluster: LocalRedisCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lease a failover lost would give its host to a second fetcher while the first is fetching (two requests at
    once), a release with a session's next lease the same: the fetchers' asyncio frontier WAITs for the replicas
    Redis has (auto) before it hands out a lease, on each master it leased from, in the same pipeline."""
    # a fresh replica still syncing on a loaded machine may miss a WAIT's 300 ms: its master is then skipped for
    # 30 s (one WAIT per master), which is not what this test is about
    monkeypatch.setattr(barrier, "_SHORT_S", 0.0)
    settings = FrontierSettings(**{**TEST_SETTINGS, "shards": 16, "shards_per_lease": 16, "replicas": -1})
    seeding = RedisFrontier.open(connect_sync(replicated_cluster.url, cluster=True), settings)
    seeding.add(new_urls(*(f"http://h{i}.test/{j}" for i in range(60) for j in range(2))))
    masters = replicated_cluster.ports[: replicated_cluster.masters]

    async def fetch() -> tuple[list[int], list[int], int]:
        pool = redis_pool_size(load({}, env={}).fetch)
        client = await connect_async(replicated_cluster.url, cluster=True, max_connections=pool)
        f = await AsyncRedisFrontier.open(client, settings)
        f.replicas = await replicas_of_async(client, settings.replicas)
        before = [_waits(port) for port in masters]
        leases = await f.lease("n/f0", 60)
        leased = [_waits(port) for port in masters]
        releases = [Release(x.token, x.shard, x.host, UrlAction.KEEP, hold=True) for x in leases]
        held = await f.release(releases)
        released = [_waits(port) for port in masters]
        await client.aclose()
        assert len(leases) == 60 and sum(isinstance(h, Held) for h in held) == 60  # each host's second URL
        return (
            [a - b for a, b in zip(leased, before, strict=True)],
            [a - b for a, b in zip(released, leased, strict=True)],
            f.replicas,
        )

    by_lease, by_release, replicas = asyncio.run(fetch())
    assert replicas == 1 and all(n > 0 for n in by_lease) and all(n > 0 for n in by_release), (by_lease, by_release)
    seeding.client.close()


def _fail_over(cluster: LocalRedisCluster, index: int) -> None:
    """CLUSTER FAILOVER on master ``index``'s replica (a planned switch: the old master stays up, now a replica);
    returns once the two have swapped roles."""
    replica = redis.Redis(port=cluster.ports[cluster.masters + index])
    old = redis.Redis(port=cluster.ports[index])
    try:
        replica.cluster("FAILOVER")
        while replica.info("replication")["role"] != "master" or old.info("replication")["role"] != "slave":
            time.sleep(0.02)
    finally:
        replica.close()
        old.close()


def test_a_fetcher_whose_barrier_meets_a_master_just_demoted_goes_on(
    replicated_cluster: LocalRedisCluster, caplog: pytest.LogCaptureFixture
) -> None:
    """After a planned failover (or a killed master back as a replica) a client's slot map still names the old
    master: its scripts are redirected (MOVED), but the barrier's WAIT, sent to that node, is refused (a replica
    cannot WAIT). That is the failover, not a bug: the WAIT is sent again to the new master, the fetcher goes on
    (it died with the ResponseError). Nor is it Redis away: the fetchers then gave back every URL they were
    about to fetch (fetch/fence.py; ~16 a planned failover under a crawl) for an outage of no time at all."""
    if int(redis.__version__.split(".")[0]) < 6:
        pytest.skip(
            "redis-py < 6 (.ci's lowest, 5.0.1): for a moment after a failover its asyncio cluster client has no node "
            "for the WAIT's key ('NoneType' ... 'name'), an outage of its own (back-off up to ~1 s): not this test's"
        )
    settings = FrontierSettings(**{**TEST_SETTINGS, "shards": 16, "shards_per_lease": 16, "replicas": 1})
    seeding = RedisFrontier.open(connect_sync(replicated_cluster.url, cluster=True), settings)
    seeding.add(new_urls(*(f"http://h{i}.test/{j}" for i in range(60) for j in range(2))))
    outage = Outage("test")
    fence = Fence(outage=outage)
    fenced: list[str] = []

    async def fetch() -> tuple[int, int]:
        client = await connect_async(replicated_cluster.url, cluster=True, max_connections=32)
        f = await AsyncRedisFrontier.open(client, settings, outage=outage)
        f.replicas = 1
        first = await f.lease("n/f0", 20)  # the client has its slot map now
        await asyncio.to_thread(_fail_over, replicated_cluster, 0)

        async def watch() -> None:  # the fetch tasks that would start a request meanwhile
            while True:
                fenced.append(fence.why_not(""))
                await asyncio.sleep(0)

        watching = asyncio.create_task(watch())
        await f.release([Release(x.token, x.shard, x.host, UrlAction.KEEP) for x in first])
        second = await f.lease("n/f0", 60)
        watching.cancel()
        await client.aclose()
        return len(first), len(second)

    with caplog.at_level(logging.INFO, logger="webtrawl.frontier"):
        leased, again = asyncio.run(fetch())
    assert leased == 20 and again == 40
    assert (outage.outages, set(fenced)) == (0, {""}), caplog.text
    seeding.client.close()


def test_a_master_without_its_replica_costs_one_wait_a_batch_not_one_a_shard(
    cluster_client: redis.cluster.RedisCluster, redis_cluster: LocalRedisCluster
) -> None:
    """A failover leaves the promoted master without a replica: each WAIT there runs out its timeout, one after the
    other on the connection. One per shard was 300 ms times the batch's shards on that master (a parser's batch of
    64 shards on 3 masters: 6 s); the barrier WAITs once per master it wrote to."""
    f = RedisFrontier.open(cluster_client, FrontierSettings(**{**TEST_SETTINGS, "shards": 32, "shards_per_lease": 32}))
    f.replicas = 1  # asked for, but this cluster has none
    masters = redis_cluster.ports[: redis_cluster.masters]
    before = [_waits(port) for port in masters]
    assert f.add(new_urls(*(f"http://h{i}.test/" for i in range(300)))).added == 300
    assert [_waits(port) - was for port, was in zip(masters, before, strict=True)] == [1] * len(masters)
    barrier._short_until.clear()  # as 30 s later: the masters are asked again
    leased = f.lease("n/f0", 100)
    assert len(leased) > 40 and len({x.shard for x in leased}) == 32
    assert [_waits(port) - was for port, was in zip(masters, before, strict=True)] == [2] * len(masters)
