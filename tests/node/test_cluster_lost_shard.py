"""A Redis Cluster master restarted without its data (no AOF, no replica to take over) under running nodes: the
shards it held are empty, and the nodes say the crawl is gone instead of losing those shards' URLs in silence and
finishing with the rest (the crawl's meta lives on another master, so it looked whole)."""

from __future__ import annotations

from pathlib import Path

import redis

from tests.node.clusterrun import NodeRun, trawl
from tests.node.crawlrun import node_args, records, stopped_at_end, wait_until
from webtrawl.frontier.keys import meta_key
from webtrawl_testweb import TestWeb
from webtrawl_testweb.local_cluster import LocalRedisCluster


def _a_master_without_the_meta(cluster: LocalRedisCluster) -> int:
    """The index of a master that does not hold the crawl's meta (CLUSTER SLOTS: low, high, [host, port, id])."""
    client = redis.Redis(port=cluster.ports[0])
    try:
        slot = int(client.cluster("KEYSLOT", meta_key("wt")))
        holder = next(int(r[2][1]) for r in client.cluster("SLOTS") if int(r[0]) <= slot <= int(r[1]))
    finally:
        client.close()
    return next(i for i, port in enumerate(cluster.ports[: cluster.masters]) if port != holder)


def test_a_cluster_master_restarted_empty_stops_the_node_with_an_error(testweb: TestWeb, tmp_path: Path) -> None:
    with LocalRedisCluster(3, data_dir=tmp_path / "cluster") as cluster:
        shared = ["--redis", cluster.url, "--cluster"]
        trawl("seed", *shared, *(f"--url={seed}" for seed in testweb.seeds(6)))
        node = NodeRun(tmp_path / "node", node_args(testweb, *shared))
        with stopped_at_end(node):
            wait_until(lambda: len(records(node.out)) >= 20, 180, "20 records", node)
            index = _a_master_without_the_meta(cluster)
            cluster.kill_master(index)
            cluster.restart_master(index)
            code = node.wait(180)
    log = node.log()
    # before, the node went on with the other masters' shards and ended "finished": the lost shards' URLs unsaid
    assert code == 3 and "stopping: finished" not in log, log[-3000:]
    assert "trawl: error: the crawl is gone from Redis: " in log and " of its 64 shards are missing" in log, log[-3000:]
    assert "Traceback" not in log
