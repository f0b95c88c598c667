"""A node's figures on a Redis Cluster crawl: they survive a restart of the node, and ``trawl stats`` reads them."""

from __future__ import annotations

import json
from pathlib import Path

import redis.cluster

from tests.node.clusterrun import NodeRun, trawl
from tests.node.test_cluster import _args, _node, _seed, _status
from webtrawl_testweb import TestWeb
from webtrawl_testweb.local_cluster import LocalRedisCluster


def test_a_restarted_node_keeps_its_fetched_figure_and_stats_reads_the_cluster(
    testweb: TestWeb, redis_cluster: LocalRedisCluster, cluster_client: redis.cluster.RedisCluster, tmp_path: Path
) -> None:
    url = redis_cluster.url
    _seed(testweb, url, tmp_path)
    out = tmp_path / "n1"
    first = NodeRun(out, _args(testweb, url, "--node-id", "n1", "--max-pages", "15"))
    assert first.wait(300) == 0, first.log()[-3000:]
    before = _node(url, "n1")["fetched"]
    assert before == _status(url)["counters"]["fetched"] > 0

    again = NodeRun(out, _args(testweb, url, "--node-id", "n1", "--max-pages", "40"))
    assert again.wait(300) == 0, again.log()[-3000:]
    counters = _status(url)["counters"]
    assert counters["fetched"] > before  # the second run fetched more
    # one node did all the fetching: its figure is the crawl's, not the second run's alone
    assert _node(url, "n1")["fetched"] == counters["fetched"]

    # trawl stats reads the crawl where it lives: named on the command line, or from the settings in --out
    for args in (["--redis", url, "--cluster"], []):
        shown = json.loads(trawl("stats", "--out", str(out), "--json", *args).stdout)
        assert shown["counters"]["fetched"] == counters["fetched"]
        assert shown["meta"]["redis_used_memory"] > 0
