"""Redis memory on a Redis Cluster: each master has its own ``maxmemory``, and the ``redis-memory`` alert (default:
90% of it) must weigh the memory of all masters against the room of all masters, not against one master's."""

from __future__ import annotations

from pathlib import Path

import redis.cluster

from tests.node.clusterrun import NodeRun, trawl
from tests.node.crawlrun import DELAY, stopped_at_end
from webtrawl_testweb import TestWeb
from webtrawl_testweb.local_cluster import LocalRedisCluster

_PRIMARIES = redis.cluster.RedisCluster.PRIMARIES


def test_the_redis_memory_alert_weighs_all_masters_against_their_own_maxmemory(
    testweb: TestWeb, redis_cluster: LocalRedisCluster, cluster_client: redis.cluster.RedisCluster, tmp_path: Path
) -> None:
    url = redis_cluster.url
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("\n".join(testweb.seeds(2)) + "\n")
    trawl("seed", str(seeds), "--redis", url, "--cluster")
    used = [int(info["used_memory"]) for info in cluster_client.info("memory", target_nodes=_PRIMARIES).values()]
    # each master at half its maxmemory, all of them together at more than 90% of one master's
    room = 2 * max(used)
    assert sum(used) > 0.9 * room, used  # the scenario: one master's maxmemory is no measure of the cluster's
    cluster_client.config_set("maxmemory", str(room), target_nodes=_PRIMARIES)
    try:
        args = [*testweb.crawl_args(), "--redis", url, "--cluster", "--delay", str(DELAY), "--max-pages", "20"]
        args += ["--fetchers", "1", "--parsers", "1", "--alert-redis-memory", "0"]
        with stopped_at_end(NodeRun(tmp_path / "n1", args)) as node:
            assert node.wait(300) == 0, node.log()[-4000:]
    finally:
        cluster_client.config_set("maxmemory", "0", target_nodes=_PRIMARIES)
    assert "alert redis-memory" not in node.log(), node.log()[-4000:]
