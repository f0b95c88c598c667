"""A node's parser stalled (SIGSTOP) for twice --process-ttl while its fetcher goes on and another node crawls: the
pages it holds are taken back and fetched again; when it goes on it drops them unstored, so no URL has a record on
both nodes and the crawl still ends with every page (issue 22: parsers fence like fetchers)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import redis

from tests.fixtures.restartable_redis import RestartableRedis
from tests.node.clusterrun import NodeRun, trawl
from tests.node.crawlrun import records, wait_until
from tests.node.test_crawl import DELAY, _assert_complete_and_polite
from webtrawl.frontier import FrontierSettings, RedisFrontier
from webtrawl_testweb import TestWeb

PROCESS_TTL = 5.0


def _args(web: TestWeb, url: str, node_id: str) -> list[str]:
    return [
        *web.crawl_args(),
        *("--redis", url, "--node-id", node_id, "--delay", str(DELAY), "--robots-retry", "0.2"),
        *("--fetchers", "1", "--parsers", "1", "--process-ttl", str(PROCESS_TTL)),
    ]


def test_a_parser_stalled_past_its_process_ttl_drops_its_pages_unstored(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    url = restartable_redis.url
    mark = testweb.mark()
    seeds = testweb.seeds(3)
    (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
    trawl("seed", str(tmp_path / "seeds.txt"), "--redis", url)
    client = redis.Redis.from_url(url)
    frontier = RedisFrontier.open(client, FrontierSettings(), create=False)
    stalled = NodeRun(tmp_path / "n1", _args(testweb, url, "n1"))
    other = NodeRun(tmp_path / "n2", _args(testweb, url, "n2"))
    try:
        wait_until(lambda: len(records(stalled.out)) >= 30 and len(records(other.out)) >= 30, 300, "records", stalled)
        parser = stalled.children()["parser-0"]
        before = frontier.counters().get("reclaimed")
        os.kill(parser, signal.SIGSTOP)
        stopped_at = time.monotonic()
        wait_until(lambda: frontier.counters().get("reclaimed") > before, 60, "the stalled pages taken back", other)
        time.sleep(max(0.0, stopped_at + 2 * PROCESS_TTL - time.monotonic()))  # the scenario: 2x --process-ttl
        os.kill(parser, signal.SIGCONT)
        for node in (stalled, other):
            assert node.wait(600) == 0, node.log()[-4000:]
    finally:
        for node in (stalled, other):
            if node.proc.poll() is None:
                node.kill()
    _assert_complete_and_polite(testweb, seeds, mark)  # every page; no two requests on a host closer than the gap
    mine, theirs = ([row["url"] for row in records(node.out)] for node in (stalled, other))
    assert len(mine) == len(set(mine)) and len(theirs) == len(set(theirs))
    assert set(mine).isdisjoint(theirs), sorted(set(mine) & set(theirs))[:10]
    assert "page(s) unstored: held past --process-ttl, they are fetched again" in stalled.log()
    assert "Traceback" not in stalled.log()
    client.close()
