"""The frontier on a real 3-master Redis Cluster: same scripts, same answers, spread over the masters."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import pytest
import redis
import redis.cluster
from redis.crc import key_slot

from tests.fixtures.redis_fixtures import TEST_SETTINGS
from webtrawl.errors import StateError
from webtrawl.frontier import (
    AsyncRedisFrontier,
    FrontierSettings,
    RedisFrontier,
    Release,
    UrlAction,
    connect_async,
    connect_sync,
)
from webtrawl.frontier.keys import meta_key, seeds_key, shard_tag
from webtrawl.frontier.scripts import SCRIPTS
from webtrawl.messages import Completion, NewUrl
from webtrawl.node.presence import _keys as presence_keys
from webtrawl_testweb.local_cluster import LocalRedisCluster

Cluster = redis.cluster.RedisCluster


def _settings(**overrides: Any) -> FrontierSettings:
    return FrontierSettings(**{**TEST_SETTINGS, "prefix": "c", "shards": 32, **overrides})


def _urls(hosts: int, per_host: int) -> list[NewUrl]:
    return [NewUrl(f"http://h{h}.test/p{i}", depth=0) for h in range(hosts) for i in range(per_host)]


def _master_of(client: Cluster, key: str) -> str:
    return str(client.get_node_from_key(key).name)


def test_shards_spread_over_every_master_and_global_keys_share_one_slot(cluster_client: Cluster) -> None:
    f = RedisFrontier.open(cluster_client, _settings())
    masters = Counter(_master_of(cluster_client, shard_tag("c", s) + "ready") for s in range(f.shards))
    assert len(masters) == 3 and min(masters.values()) >= 4, masters
    node_key, nodes_key, stop_key = presence_keys("c")
    global_keys = [meta_key("c"), seeds_key("c"), node_key + "n1", nodes_key, stop_key]
    assert len({key_slot(k.encode()) for k in global_keys}) == 1


def test_add_lease_release_complete_on_a_cluster_match_a_single_server(cluster_client: Cluster) -> None:
    f = RedisFrontier.open(cluster_client, _settings())
    result = f.add(_urls(60, 3))
    assert (result.added, result.seen) == (180, 0)
    assert f.add(_urls(60, 1)).seen == 60  # the Bloom filter of every shard, on whichever master it lives
    leased = f.lease("n1/f0", 100)
    assert len(leased) == 60 and len({x.host for x in leased}) == 60  # one URL per host, hosts from every shard
    assert f.lease("n2/f0", 100) == []  # every host is leased: another node gets none of them
    f.release([Release(x.token, x.shard, x.host, UrlAction.KEEP, delay_ms=0) for x in leased])
    assert f.complete([Completion(x.token, x.shard, {"stored": 1}) for x in leased]) == [None] * 60
    second = f.lease("n2/f0", 100)
    assert {x.url for x in second} == {f"http://h{h}.test/p1" for h in range(60)}
    counters = f.counters()  # summed over 32 shards on 3 masters
    assert (counters.get("added"), counters.queued, counters.inflight, counters.get("stored")) == (180, 60, 60, 60)
    assert counters.get("hosts") == 60


def test_lost_scripts_on_one_master_are_loaded_again_on_every_master(
    cluster_client: Cluster, redis_cluster: LocalRedisCluster
) -> None:
    f = RedisFrontier.open(cluster_client, _settings())
    f.add(_urls(30, 2))
    victim = redis.Redis(host="127.0.0.1", port=redis_cluster.ports[1], protocol=2)
    victim.script_flush()  # as after a restart or a failover to a fresh replica
    assert len(f.lease("n1/f0", 100)) == 30
    assert f.counters().queued == 30
    assert all(victim.script_exists(*[script.sha for script in SCRIPTS.values()]))
    victim.close()


def test_async_frontier_on_a_cluster_recovers_from_noscript_too(
    cluster_client: Cluster, redis_cluster: LocalRedisCluster
) -> None:
    RedisFrontier.open(cluster_client, _settings()).add(_urls(20, 1))
    cluster_client.execute_command("SCRIPT", "FLUSH", target_nodes=Cluster.PRIMARIES)

    async def run() -> tuple[int, int]:
        client = await connect_async(redis_cluster.url, cluster=True)
        f = await AsyncRedisFrontier.open(client, _settings())
        leased = await f.lease("n1/f0", 50)
        await f.release([Release(x.token, x.shard, x.host, UrlAction.RETRY) for x in leased])
        counters = await f.counters()
        await f.watch_ready(lambda: None)  # no ready channel on a cluster: returns, the fetcher polls
        await client.aclose()
        return len(leased), counters.queued

    assert asyncio.run(run()) == (20, 20)


def test_the_frontier_cap_holds_across_shards_on_all_masters(cluster_client: Cluster) -> None:
    f = RedisFrontier.open(cluster_client, _settings(frontier_cap=50, recent_urls=0))
    urls = _urls(40, 5)
    for i in range(0, len(urls), 30):
        f.add(urls[i : i + 30])
    late = RedisFrontier.open(cluster_client, _settings(frontier_cap=50, recent_urls=0))  # another node's client
    assert late.add([NewUrl("http://new.test/", depth=0)]).dropped == {"frontier-cap": 1}
    counters = f.counters()
    assert counters.queued == 50
    assert counters.get("drop:frontier-cap") == 151


def test_cluster_mode_on_a_plain_server_or_a_socket_is_a_one_line_state_error(redis_url: str) -> None:
    with pytest.raises(StateError, match="cluster mode needs a redis:// or rediss:// URL"):
        connect_sync(redis_url, cluster=True)  # the session server listens on a unix socket
    with pytest.raises(StateError, match=r"cannot reach Redis at redis://127\.0\.0\.1:1: "):
        connect_sync("redis://127.0.0.1:1", cluster=True)


def test_a_plain_client_on_a_cluster_node_says_to_add_cluster(redis_cluster: LocalRedisCluster) -> None:
    with pytest.raises(StateError, match=r"^Redis at redis://127\.0\.0\.1:\d+ is a Redis Cluster node: add --cluster$"):
        connect_sync(redis_cluster.url)
    with pytest.raises(StateError, match="is a Redis Cluster node: add --cluster"):
        asyncio.run(connect_async(redis_cluster.url))


def test_spider_routes_travel_with_their_urls_across_masters_and_nodes(cluster_client: Cluster) -> None:
    f = RedisFrontier.open(cluster_client, _settings(lease_ttl_ms=0))
    routes = {f"http://h{h}.test/p": f'parse_item{{"n":{h}}}' for h in range(30)}
    f.add([NewUrl(url, 1, route=route) for url, route in routes.items()])
    assert {x.url: x.route for x in f.lease("n1/f0", 100)} == routes
    assert f.reclaim_expired() == 30  # node n1 died: its leases expire and go back to their queues
    assert {x.url: x.route for x in f.lease("n2/f0", 100)} == routes
