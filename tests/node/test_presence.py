"""Node identity, heartbeats, the stop request and trawl seed, against a real Redis (plain and cluster)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import time
import tracemalloc
import uuid
from pathlib import Path

import pytest
import redis
import redis.cluster

from tests.node.clusterrun import TRAWL, NodeRun, trawl
from tests.node.crawlrun import wait_until
from webtrawl.config import load
from webtrawl.errors import StateError
from webtrawl.frontier import FrontierSettings, RedisFrontier
from webtrawl.frontier.keys import global_tag
from webtrawl.node.presence import Presence, StopWatch, list_nodes, request_stop, resolve_node_id
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl.node.shared import seed
from webtrawl_testweb.local_cluster import LocalRedisCluster


def _prefix() -> str:
    return f"p{uuid.uuid4().hex[:10]}"


def test_a_node_id_is_made_once_per_out_dir_and_kept(tmp_path: Path) -> None:
    first = resolve_node_id(tmp_path / "a", "local")
    assert first.startswith(socket.gethostname().split(".")[0][:20]) and len(first.rsplit("-", 1)[1]) == 6
    assert resolve_node_id(tmp_path / "a", "local") == first  # a restart keeps it
    assert resolve_node_id(tmp_path / "b", "local") != first
    assert resolve_node_id(tmp_path / "a", "crawler-7") == "crawler-7"  # --node-id wins


def test_a_live_node_id_elsewhere_is_refused_but_its_own_restart_is_not(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    prefix = _prefix()
    first = Presence(redis_client, prefix, "n1", tmp_path / "one", ttl_s=30)
    first.claim()
    first.beat("crawling", {"fetched": 3})
    with pytest.raises(StateError, match=r"node id .n1. is in use by a live node on .*give this node another"):
        Presence(redis_client, prefix, "n1", tmp_path / "two", ttl_s=30).claim()
    Presence(redis_client, prefix, "n1", tmp_path / "one", ttl_s=30).claim()  # same host and out: a restart
    first.leave({"fetched": 5})
    Presence(redis_client, prefix, "n1", tmp_path / "two", ttl_s=30).claim()  # it left: the id is free


def test_status_tells_live_stopped_and_lost_nodes_apart(redis_client: redis.Redis, tmp_path: Path) -> None:
    prefix = _prefix()
    nodes = {name: Presence(redis_client, prefix, name, tmp_path / name, ttl_s=30) for name in ("a", "b", "c")}
    for node in nodes.values():
        node.claim()
    nodes["a"].beat("crawling", {"fetched": 10, "rate": 2.5, "leases": 7})
    nodes["b"].leave({"fetched": 4})
    nodes["c"].beat("crawling", {"fetched": 3}, ttl_ms=1)  # then dies: its heartbeat expires
    wait_until(lambda: list_nodes(redis_client, prefix)[-1].state == "lost", 10, "node c to be lost")
    listed = {n.node_id: n for n in list_nodes(redis_client, prefix)}
    assert [(n, listed[n].state, listed[n].live) for n in "abc"] == [
        ("a", "crawling", True),
        ("b", "stopped", False),
        ("c", "lost", False),
    ]
    shown = listed["a"].as_dict(0)
    assert (shown["fetched"], shown["rate"], shown["leases"]) == (10, 2.5, 7)
    lost = listed["c"].as_dict(0)  # what it fetched, and where it ran: the machine to look at
    assert (lost["fetched"], lost["host"], lost["out"]) == (3, socket.gethostname(), str((tmp_path / "c").resolve()))


def test_a_node_not_seen_for_a_day_is_forgotten_when_another_starts(
    redis_client: redis.Redis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = _prefix()
    day_ago = time.time() - 86_400 - 60
    with monkeypatch.context() as past:
        past.setattr(time, "time", lambda: day_ago)  # the clock of the node's heartbeat, a day back
        old = Presence(redis_client, prefix, "old-pod", tmp_path / "old", ttl_s=30)
        old.claim()
        old.beat("crawling", {"fetched": 5}, ttl_ms=1)  # then lost
    assert [n.node_id for n in list_nodes(redis_client, prefix)] == ["old-pod"]
    Presence(redis_client, prefix, "new-pod", tmp_path / "new", ttl_s=30).claim()
    assert list_nodes(redis_client, prefix) == []  # the new one has not beaten yet; the old one is gone
    places = redis_client.hkeys(f"{global_tag(prefix)}where")  # and its place too: the hash stays as small
    assert places == [b"new-pod"]


def test_stop_reaches_running_nodes_but_not_nodes_started_later(redis_client: redis.Redis) -> None:
    prefix = _prefix()
    running = StopWatch(redis_client, prefix, "n1")
    assert not running.stop_requested()
    request_stop(redis_client, prefix)
    assert running.stop_requested()
    later = StopWatch(redis_client, prefix, "n1")
    assert not later.stop_requested()
    assert not StopWatch(redis_client, _prefix(), "n1").stop_requested()  # another crawl's stop is not this one's


def test_a_stop_of_one_node_reaches_that_node_only(redis_client: redis.Redis) -> None:
    """trawl stop --redis URL --node ID: before, one node of a shared crawl could only be stopped by a signal on
    its machine."""
    prefix = _prefix()
    one, other = StopWatch(redis_client, prefix, "n1"), StopWatch(redis_client, prefix, "n2")
    request_stop(redis_client, prefix, "n1")
    assert one.stop_requested() and not other.stop_requested()
    assert not StopWatch(redis_client, prefix, "n1").stop_requested()  # n1 started again: not stopped


def _seed_file(path: Path, start: int, count: int) -> Path:
    with path.open("w") as f:
        for i in range(start, start + count):
            f.write(f"https://site{i % 5000}.test/section-{i // 5000}/page-{i}.html\n")
    return path


def test_trawl_seed_streams_a_file_in_memory_that_does_not_grow_with_it(
    cluster_client: redis.cluster.RedisCluster, redis_cluster: LocalRedisCluster, tmp_path: Path
) -> None:
    cfg = load({"redis": redis_cluster.url, "cluster": "true", "shards": "16"}, env={})
    seed(cfg, _seed_file(tmp_path / "warm.txt", 0, 2000), [])  # imports, connections, script loads

    def peak(path: Path) -> int:
        tracemalloc.start()
        try:
            totals = seed(cfg, path, [])
            return tracemalloc.get_traced_memory()[1] if totals["added"] else -1
        finally:
            tracemalloc.stop()

    small = peak(_seed_file(tmp_path / "small.txt", 10_000, 4_000))
    large = peak(_seed_file(tmp_path / "large.txt", 100_000, 16_000))
    assert 0 < large < small * 1.5, (small, large)
    counters = RedisFrontier.open(cluster_client, FrontierSettings(), create=False).counters()
    assert counters.queued == 22_000 and counters.get("added") == 22_000


@pytest.mark.parametrize("how", ["trawl stop", "SIGTERM"])
def test_a_node_waiting_for_seeds_is_listed_as_waiting_and_stops_cleanly(how: str, tmp_path: Path) -> None:
    """A node started before 'trawl seed' (a deployment scaled up first), stopped before any seed came: by 'trawl
    stop', or by SIGTERM (a deployment scaled down). It leaves as stopped, not lost."""
    server = EmbeddedRedis(tmp_path / "redis").start()  # a crawl of its own: the node uses the default key prefix
    shared = ["--redis", server.url]
    node = NodeRun(tmp_path / "node", [*shared, "--node-id", "early"])
    try:
        wait_until(lambda: "waiting for 'trawl seed'" in node.log(), 120, "the node to wait for seeds", node)
        wait_until(lambda: _states(shared) == [("early", "waiting")], 60, "the node listed as waiting", node)
        if how == "SIGTERM":
            node.proc.send_signal(signal.SIGTERM)
        else:
            trawl("stop", *shared)
        assert node.wait(120) == 0, node.log()[-4000:]
        assert _states(shared) == [("early", "stopped")]
    finally:
        if node.proc.poll() is None:
            node.kill()
        server.stop()
    assert ("stopping: trawl stop requested" in node.log()) == (how == "trawl stop")


def _states(shared: list[str]) -> list[tuple[str, str]]:
    return [(n["id"], n["state"]) for n in json.loads(trawl("status", *shared, "--json").stdout)["nodes"]]


def test_trawl_stop_of_one_node_drains_that_node_and_leaves_the_others(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "redis").start()
    shared = ["--redis", server.url]
    nodes = [NodeRun(tmp_path / name, [*shared, "--node-id", name]) for name in ("n1", "n2")]
    try:
        for node in nodes:
            wait_until(lambda n=node: "waiting for 'trawl seed'" in n.log(), 120, "the node to wait for seeds", node)
        wait_until(lambda: sorted(_states(shared)) == [("n1", "waiting"), ("n2", "waiting")], 60, "both", nodes[0])
        wrong = subprocess.run([*TRAWL, "stop", *shared, "--node", "n3"], capture_output=True, text=True, timeout=60)
        expected = "trawl: error: --node n3: no such node is running (running: n1, n2)"
        assert (wrong.returncode, wrong.stderr.splitlines()) == (2, [expected]), wrong.stderr
        assert "asked 1 node(s) to drain and exit: n1" in trawl("stop", *shared, "--node", "n1").stdout
        assert nodes[0].wait(120) == 0, nodes[0].log()[-4000:]
        assert sorted(_states(shared)) == [("n1", "stopped"), ("n2", "waiting")] and nodes[1].proc.poll() is None
        trawl("stop", *shared)
        assert nodes[1].wait(120) == 0, nodes[1].log()[-4000:]
    finally:
        for node in nodes:
            if node.proc.poll() is None:
                node.kill()
        server.stop()
