"""A Redis Cluster master killed -9 under two crawling nodes: its replica is promoted, and the nodes ride it out by
themselves (back-off while the cluster elects, a new slot map, scripts loaded on the new master) and finish the
crawl with every page recorded and politeness held in the access log."""

from __future__ import annotations

from pathlib import Path

import redis.cluster

from tests.node.clusterrun import NodeRun
from tests.node.crawlrun import assert_complete_and_polite, records, wait_until
from tests.node.test_cluster import _all_records, _args, _seed
from webtrawl.frontier.keys import global_tag
from webtrawl_testweb import TestWeb
from webtrawl_testweb.local_cluster import LocalRedisCluster


def _master_of_global_slot(cluster: LocalRedisCluster) -> int:
    """Index of the master holding the crawl's meta and the nodes' presence: the hardest one to lose."""
    client = redis.cluster.RedisCluster.from_url(cluster.url)
    try:
        port = client.nodes_manager.get_node_from_slot(client.keyslot(global_tag("wt"))).port
    finally:
        client.close()
    return cluster.ports.index(int(port))


def test_a_master_killed_9_mid_crawl_is_ridden_out_by_two_nodes(
    testweb: TestWeb, replicated_cluster: LocalRedisCluster, tmp_path: Path
) -> None:
    url = replicated_cluster.url
    victim = _master_of_global_slot(replicated_cluster)
    assert victim != 0  # the nodes' --redis URL names master 0; they must find the promoted replica by themselves
    mark = testweb.mark()
    seeds = _seed(testweb, url, tmp_path)
    outs = [tmp_path / "n1", tmp_path / "n2"]
    # A lease whose reply the dead master never sent stays until its TTL: short ones, so the test ends soon.
    ttls = ("--lease-ttl", "10", "--process-ttl", "20", "--total", "5", "--robots", "5", "--redis-replicas", "1")
    nodes = [NodeRun(out, _args(testweb, url, "--node-id", out.name, *ttls)) for out in outs]
    try:
        wait_until(lambda: sum(len(records(out)) for out in outs) >= 200, 300, "200 records", nodes[0])
        replicated_cluster.kill_master(victim)
        for node in nodes:
            assert node.wait(600) == 0, node.log()[-4000:]
    finally:
        for node in nodes:
            if node.proc.poll() is None:
                node.kill()
    for node in nodes:
        log = node.log()
        assert "alert redis: lost the connection to Redis" in log and "Traceback" not in log, log[-4000:]
        assert "alert redis resolved: Redis is back" in log
    assert_complete_and_polite(testweb, seeds, mark)  # every page (a page may be fetched twice), politely
    assert set(testweb.model.expected_crawl(seeds).fetched) <= set(_all_records(*outs))
