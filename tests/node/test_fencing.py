"""Two nodes crawl while one of them falls behind its leases; it fences itself and no URL is stored twice.

A node cut off from Redis (a partition, played by a TCP relay that stops carrying bytes) for twice its lease TTL: its
leases expire and the other node takes its hosts over. No request of it overlaps the other node's on a host (the
access log keeps every politeness gap), and a page whose lease was taken back meanwhile is dropped, not stored beside
the other node's record of it.

A node's parser stalled (SIGSTOP) for twice --process-ttl while its fetcher goes on: the pages it holds are taken
back and fetched again; when it goes on it drops them unstored (parsers fence like fetchers)."""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from tests.fixtures.fault_proxy import FaultProxy
from tests.fixtures.restartable_redis import RestartableRedis
from tests.node.clusterrun import NodeRun, trawl
from tests.node.crawlrun import DELAY, assert_complete_and_polite, records, wait_until
from webtrawl.frontier import FrontierSettings, RedisFrontier
from webtrawl_testweb import TestWeb

TTL = 12.0
PROCESS_TTL = 5.0
_DISCARDED_RE = re.compile(r"(\d+) completion\(s\) discarded")


def _args(web: TestWeb, url: str, node_id: str, *extra: str) -> list[str]:
    return [
        *web.crawl_args(),
        *("--redis", url, "--node-id", node_id, "--delay", str(DELAY), "--robots-retry", "0.2"),
        *("--fetchers", "1", "--parsers", "1", *extra),
    ]


@contextmanager
def _two_nodes(
    web: TestWeb, server: RestartableRedis, tmp_path: Path, first_url: str, *extra: str
) -> Iterator[tuple[NodeRun, NodeRun, RedisFrontier]]:
    """Seeds the crawl, starts node n1 on ``first_url`` and n2 on the server itself, yields them with the frontier
    once each has stored 30 records, and waits for both to end; then every page must be crawled politely and no URL
    recorded twice, on one node or on both, but for the URLs of the one batch whose completions n1 announced as
    discarded: a stall that lands after a batch's fence check and before its completion (its writes and link adds)
    is the window the fence leaves, and the crawler says so in its log (parse/batch.py)."""
    mark = web.mark()
    seeds = web.seeds(3)
    (tmp_path / "seeds.txt").write_text("\n".join(seeds) + "\n")
    trawl("seed", str(tmp_path / "seeds.txt"), "--redis", server.url)
    client = redis.Redis.from_url(server.url)
    frontier = RedisFrontier.open(client, FrontierSettings(), create=False)
    first = NodeRun(tmp_path / "n1", _args(web, first_url, "n1", *extra))
    other = NodeRun(tmp_path / "n2", _args(web, server.url, "n2", *extra))
    try:
        wait_until(lambda: len(records(first.out)) >= 30 and len(records(other.out)) >= 30, 300, "records", first)
        yield first, other, frontier
        for node in (first, other):
            assert node.wait(600) == 0, node.log()[-4000:]
    finally:
        for node in (first, other):
            if node.proc.poll() is None:
                node.kill()
    assert_complete_and_polite(web, seeds, mark)  # every page; no two requests on a host closer than the gap
    mine, theirs = ([row["url"] for row in records(node.out)] for node in (first, other))
    twice = (len(mine) - len(set(mine))) + (len(theirs) - len(set(theirs))) + len(set(mine) & set(theirs))
    discarded = _DISCARDED_RE.findall(first.log())
    assert twice <= sum(map(int, discarded)), (twice, discarded, sorted(set(mine) & set(theirs))[:10])
    # only the batch in flight when the stall began: every later batch's late pages were dropped by the fence
    assert len(discarded) <= 1, discarded
    assert "Traceback" not in first.log()
    client.close()


def _for_twice(ttl: float, start: Callable[[], None], end: Callable[[], None], taken_back: Callable[[], bool]) -> None:
    """The scenario: ``start()``, wait until the other node took something back, ``end()`` 2x ``ttl`` after start."""
    start()
    started = time.monotonic()
    wait_until(taken_back, 60, "the other node to take leases back")
    time.sleep(max(0.0, started + 2 * ttl - time.monotonic()))
    end()


def test_a_node_cut_off_from_redis_for_twice_its_lease_ttl_fences_itself(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    # A lease must outlast its request's time limits (self-fencing), and those limits stay far above how long the
    # test web, a thread of this process, takes to answer on a loaded machine: with 2 s, robots.txt timed out there
    # until hosts were given up (their pages missing), as in test_cluster.py's kill -9 test.
    ttls = ("--lease-ttl", str(TTL), "--total", "7", "--robots", "7")
    with FaultProxy(restartable_redis.port) as proxy:
        with _two_nodes(testweb, restartable_redis, tmp_path, proxy.url(), *ttls) as (cut, _, frontier):
            before = frontier.counters().get("reclaimed")
            _for_twice(TTL, proxy.cut, proxy.heal, lambda: frontier.counters().get("reclaimed") > before)
        assert "alert redis: lost the connection to Redis" in cut.log()
        assert frontier.counters().get("stale-release") > 0  # the cut node did release leases it no longer held


def test_a_parser_stalled_past_its_process_ttl_drops_its_pages_unstored(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    url = restartable_redis.url
    with _two_nodes(testweb, restartable_redis, tmp_path, url, "--process-ttl", str(PROCESS_TTL)) as (stalled, _, f):
        parser = stalled.children()["parser-0"]
        before = f.counters().get("reclaimed")
        stop, go_on = (lambda: os.kill(parser, signal.SIGSTOP)), (lambda: os.kill(parser, signal.SIGCONT))
        _for_twice(PROCESS_TTL, stop, go_on, lambda: f.counters().get("reclaimed") > before)
    assert "page(s) unstored: held past --process-ttl, they are fetched again" in stalled.log()
