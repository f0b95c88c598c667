"""End to end on a real 3-master Redis Cluster: ``trawl seed``, two ``trawl node`` processes, status, stop, kill -9.

What users rely on is checked where it shows: the test web's access log (every page fetched, once, with the
politeness gap kept across nodes, robots.txt first and obeyed), the JSONL records of both nodes, and ``trawl status``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis.cluster

from tests.node.clusterrun import NodeRun, leases_of, trawl
from tests.node.crawlrun import DELAY, assert_complete_and_polite, records, wait_until
from webtrawl.config import load
from webtrawl.frontier import FrontierSettings, RedisFrontier
from webtrawl.node.shared import status
from webtrawl_testweb import TestWeb
from webtrawl_testweb.local_cluster import LocalRedisCluster


def _args(web: TestWeb, url: str, *extra: str) -> list[str]:
    return [
        *web.crawl_args(),
        *("--redis", url, "--cluster"),
        *("--delay", str(DELAY), "--fetchers", "1", "--parsers", "1", "--robots-retry", "0.2"),
        *extra,
    ]


def _seed(web: TestWeb, url: str, tmp_path: Path) -> list[str]:
    seeds = web.seeds(3)
    path = tmp_path / "seeds.txt"
    path.write_text("# three seeds\n" + "\n".join(seeds) + "\n")
    assert "read 3 seed URLs: 3 added" in trawl("seed", str(path), "--redis", url, "--cluster").stdout
    return seeds


def _status(url: str) -> dict[str, Any]:
    return status(load({"redis": url, "cluster": "true"}, env={}))


def _node(url: str, node_id: str) -> dict[str, Any]:
    return next((n for n in _status(url)["nodes"] if n["id"] == node_id), {})


def _freeze_holding_leases(node: NodeRun, client: redis.cluster.RedisCluster, node_id: str) -> int:
    """Stop the node (SIGSTOP) at an instant when it holds leases; returns how many. Kill or thaw it after."""
    while True:
        wait_until(lambda: leases_of(client, node_id) > 0, 120, f"{node_id} to hold leases")
        node.freeze()
        held = leases_of(client, node_id)
        if held:
            return held
        node.thaw()


def _wait_rarely(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll a condition that costs Redis round trips a few times a second, not twenty."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.25)


def _all_records(*outs: Path) -> list[str]:
    return [row["url"] for out in outs for row in records(out)]


def test_two_nodes_fetch_every_page_once_politely_and_stop_on_request(
    testweb: TestWeb, redis_cluster: LocalRedisCluster, cluster_client: redis.cluster.RedisCluster, tmp_path: Path
) -> None:
    url = redis_cluster.url
    mark = testweb.mark()
    seeds = _seed(testweb, url, tmp_path)
    outs = [tmp_path / "n1", tmp_path / "n2"]
    nodes = [NodeRun(out, _args(testweb, url, "--node-id", out.name, "--keep-running")) for out in outs]
    # Light checks only while crawling: the test web runs in this process and stamps its access log here.
    wait_until(lambda: all(records(out) for out in outs), 120, "both nodes to store records", nodes[0])

    def crawling() -> list[str]:
        return sorted(n["id"] for n in _status(url)["nodes"] if n["state"] == "crawling")

    _wait_rarely(lambda: crawling() == ["n1", "n2"], 60, "status to list both nodes crawling")
    frontier = RedisFrontier.open(cluster_client, FrontierSettings(), create=False)
    _wait_rarely(frontier.is_finished, 300, "the shared frontier to run empty")
    assert all(n.proc.poll() is None for n in nodes)  # --keep-running: they wait for more work

    assert "asked 2 node(s) to drain and exit: n1, n2" in trawl("stop", "--redis", url, "--cluster").stdout
    for node in nodes:
        assert node.wait(120) == 0, node.log()[-3000:]
        assert "stopping: trawl stop requested" in node.log()

    # zero duplicates, zero politeness or robots violations across the two nodes
    assert assert_complete_and_polite(testweb, seeds, mark) == {}
    urls = _all_records(*outs)
    assert len(urls) == len(set(urls)) and set(testweb.model.expected_crawl(seeds).fetched) <= set(urls)

    shown = trawl("status", "--redis", url, "--cluster").stdout
    assert re.search(r"nodes: 0 live, 2 seen today", shown), shown
    report = _status(url)
    per_node = {n["id"]: n for n in report["nodes"]}
    assert {n["state"] for n in per_node.values()} == {"stopped"}
    assert per_node["n1"]["fetched"] + per_node["n2"]["fetched"] == report["counters"]["fetched"]


def test_kill_9_of_one_node_the_other_takes_over_its_leases_and_finishes(
    testweb: TestWeb, redis_cluster: LocalRedisCluster, cluster_client: redis.cluster.RedisCluster, tmp_path: Path
) -> None:
    url = redis_cluster.url
    mark = testweb.mark()
    seeds = _seed(testweb, url, tmp_path)
    # Leases expire within seconds. A lease must outlast its request's time limits (self-fencing), but those limits
    # stay far above how long the test web, a thread of this process, takes to answer on a loaded machine: at load
    # 15-20 on two cores it took over 2 s (several turns of its event loop for a new TLS connection), and a 2 s
    # --total/--robots then had robots.txt time out until hosts were given up (pages missing), pages fetched again
    # (duplicates), and requests the crawler had given up answered after it had moved on (politeness violations).
    ttls = ("--lease-ttl", "15", "--process-ttl", "15", "--total", "10", "--robots", "10")
    victim = NodeRun(tmp_path / "n1", _args(testweb, url, "--node-id", "n1", *ttls))
    survivor = NodeRun(tmp_path / "n2", _args(testweb, url, "--node-id", "n2", *ttls))
    wait_until(lambda: len(records(victim.out)) >= 60, 120, "n1 to store 60 records")
    dead_leases = _freeze_holding_leases(victim, cluster_client, "n1")
    victim.kill()

    _wait_rarely(lambda: _node(url, "n1").get("state") == "lost", 60, "status to show n1 lost")
    assert survivor.wait(300) == 0, survivor.log()[-3000:]
    duplicates = assert_complete_and_polite(testweb, seeds, mark)
    assert sum(count - 1 for count in duplicates.values()) <= dead_leases, (duplicates, dead_leases)
    assert leases_of(cluster_client, "n1") == 0
    assert _status(url)["counters"]["reclaimed"] >= dead_leases
    assert set(testweb.model.expected_crawl(seeds).fetched) <= set(_all_records(victim.out, survivor.out))


def test_a_node_restarted_with_its_id_takes_back_its_own_leases_at_once(
    testweb: TestWeb, redis_cluster: LocalRedisCluster, cluster_client: redis.cluster.RedisCluster, tmp_path: Path
) -> None:
    url = redis_cluster.url
    mark = testweb.mark()
    seeds = _seed(testweb, url, tmp_path)
    out = tmp_path / "auto"
    first = NodeRun(out, _args(testweb, url))  # default TTLs (120 s): only the owner can take its leases back soon
    other = NodeRun(tmp_path / "n2", _args(testweb, url, "--node-id", "n2"))
    wait_until(lambda: len(records(out)) >= 60, 120, "the first node to store 60 records")
    node_id = (out / "node-id").read_text().strip()
    held = _freeze_holding_leases(first, cluster_client, node_id)
    first.kill()

    again = NodeRun(out, _args(testweb, url))  # same --out: same node id
    assert again.wait(300) == 0, again.log()[-3000:]
    assert other.wait(300) == 0, other.log()[-3000:]
    log = again.log()
    found = re.search(rf"took back (\d+) URLs leased by a previous run of node {re.escape(node_id)}", log)
    # Pages the killed parser had already stored are completed from its log first (their leases acked, not
    # refetched); every other lease the frozen node held is taken back at once. The log's batch may also hold
    # completions the frozen parser had already made before the freeze (their leases were gone when they were
    # counted), so the log's count is an upper bound of the held leases it settled, not their number.
    completed = sum(int(n) for n in re.findall(r"completed the (\d+) page\(s\) a killed parser had stored", log))
    assert found, log[-3000:]
    assert int(found.group(1)) <= held <= int(found.group(1)) + completed, (held, log[-3000:])
    duplicates = assert_complete_and_polite(testweb, seeds, mark)
    assert sum(count - 1 for count in duplicates.values()) <= held
