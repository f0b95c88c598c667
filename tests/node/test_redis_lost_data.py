"""A Redis restarted without its data (no AOF, the wrong --dir, a FLUSHALL) under running nodes: the crawl is gone,
and the nodes say so with an error instead of taking the empty frontier for a crawl that finished."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.restartable_redis import RestartableRedis
from tests.node.clusterrun import NodeRun, trawl
from tests.node.crawlrun import node_args, records, stopped_at_end, wait_until
from webtrawl_testweb import TestWeb


def test_a_redis_restarted_empty_stops_the_node_with_an_error_not_as_a_finished_crawl(
    testweb: TestWeb, tmp_path: Path
) -> None:
    with RestartableRedis(tmp_path / "redis", aof=False) as server:
        trawl("seed", "--redis", server.url, *(f"--url={seed}" for seed in testweb.seeds(3)))
        node = NodeRun(tmp_path / "node", node_args(testweb, "--redis", server.url))
        with stopped_at_end(node):
            wait_until(lambda: len(records(node.out)) >= 20, 120, "20 records", node)
            server.kill()
            server.start()  # without the crawl: no AOF, no snapshot
            code = node.wait(120)
    log = node.log()
    # before, the node logged "stopping: finished" and exited 0: the crawl's queued URLs were lost without a word
    assert code == 3 and "stopping: finished" not in log, log[-3000:]
    assert "trawl: error: the crawl is gone from Redis: its meta (wt:{wt:g}:meta) is missing" in log, log[-3000:]
    assert "Traceback" not in log
