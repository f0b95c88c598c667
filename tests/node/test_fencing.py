"""A node cut off from Redis (a partition, played by a TCP relay that stops carrying bytes) for twice its lease TTL
while another node crawls: its leases expire and the other node takes its hosts over. The cut node fences itself:
no request of it overlaps the other node's on a host (the access log keeps every politeness gap), and a page whose
lease was taken back meanwhile is dropped, not stored beside the other node's record of it."""

from __future__ import annotations

import time
from pathlib import Path

import redis

from tests.fixtures.fault_proxy import FaultProxy
from tests.fixtures.restartable_redis import RestartableRedis
from tests.node.clusterrun import NodeRun, trawl
from tests.node.crawlrun import records, wait_until
from tests.node.test_crawl import DELAY, _assert_complete_and_polite
from webtrawl.frontier import FrontierSettings, RedisFrontier
from webtrawl_testweb import TestWeb

TTL = 6.0


def _args(web: TestWeb, url: str, node_id: str) -> list[str]:
    return [
        *web.crawl_args(),
        *("--redis", url, "--node-id", node_id, "--delay", str(DELAY), "--robots-retry", "0.2"),
        *("--fetchers", "1", "--parsers", "1", "--lease-ttl", str(TTL), "--total", "2", "--robots", "2"),
    ]


def test_a_node_cut_off_from_redis_for_twice_its_lease_ttl_fences_itself(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    url = restartable_redis.url
    mark = testweb.mark()
    seeds = testweb.seeds(3)
    (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
    trawl("seed", str(tmp_path / "seeds.txt"), "--redis", url)
    client = redis.Redis.from_url(url)
    frontier = RedisFrontier.open(client, FrontierSettings(), create=False)
    with FaultProxy(restartable_redis.port) as proxy:
        cut = NodeRun(tmp_path / "n1", _args(testweb, proxy.url(), "n1"))
        other = NodeRun(tmp_path / "n2", _args(testweb, url, "n2"))
        try:
            wait_until(lambda: len(records(cut.out)) >= 50 and len(records(other.out)) >= 50, 300, "records", cut)
            before = frontier.counters().get("reclaimed")
            proxy.cut()
            cut_at = time.monotonic()
            wait_until(lambda: frontier.counters().get("reclaimed") > before, 60, "n2 to take n1's hosts", other)
            time.sleep(max(0.0, cut_at + 2 * TTL - time.monotonic()))  # the scenario: cut for 2x the lease TTL
            proxy.heal()
            for node in (cut, other):
                assert node.wait(600) == 0, node.log()[-4000:]
        finally:
            for node in (cut, other):
                if node.proc.poll() is None:
                    node.kill()
    assert "alert redis: lost the connection to Redis" in cut.log() and "Traceback" not in cut.log()
    assert frontier.counters().get("stale-release") > 0  # the cut node did release leases it no longer held
    _assert_complete_and_polite(testweb, seeds, mark)  # every page; no two requests on a host closer than the gap
    mine, theirs = ([row["url"] for row in records(node.out)] for node in (cut, other))
    assert len(mine) == len(set(mine)) and len(theirs) == len(set(theirs))
    assert set(mine).isdisjoint(theirs), sorted(set(mine) & set(theirs))[:10]
    client.close()
