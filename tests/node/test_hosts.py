"""``trawl status --host NAME`` and the dashboard's host lists, on a real frontier in a real Redis: a host that
keeps failing is reported parked, with its failures, wait, queue and cached robots.txt; a healthy one is due."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.frontier.helpers import elapse, new_urls, release
from tests.node.clusterrun import trawl
from webtrawl.frontier import FrontierSettings, RedisFrontier, UrlAction, connect_sync
from webtrawl.node.hosts import host_report, sample_hosts
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl.politeness.robots import RobotsRules


@pytest.fixture
def crawl(tmp_path: Path) -> Iterator[tuple[str, RedisFrontier]]:
    """A crawl under the default prefix (as ``trawl status`` reads it) in a Redis of its own."""
    server = EmbeddedRedis(tmp_path / "redis").start()
    client = connect_sync(server.url)
    settings = FrontierSettings(
        shards=4, backoff_base_ms=60_000, backoff_max_ms=3_600_000, park_after=3, backoff_jitter=0.0, empty_poll_ms=0
    )
    yield server.url, RedisFrontier.open(client, settings)
    client.close()
    server.stop()


def _park(f: RedisFrontier, host: str, failures: int) -> None:
    for _ in range(failures):
        elapse(f, host)
        release(f, f.lease("n1/f0", 1), UrlAction.HEAD, delay_ms=1000, failed=True)


def test_a_parked_host_is_explained(crawl: tuple[str, RedisFrontier]) -> None:
    url, f = crawl
    f.add(new_urls("http://bad.test/1", "http://bad.test/2"))
    rules = RobotsRules(b"User-agent: *\nCrawl-delay: 4\n", token="webtrawl", expires_at=math.inf)
    f.set_robots("http://bad.test", rules.encode(), 3600)
    _park(f, "bad.test", 3)
    f.add(new_urls("http://good.test/1"))

    doc = host_report(f.client, "wt", "bad.test", park_after=3)
    assert doc["known"] and doc["queued"] == 2 and doc["failures"] == 3 and not doc["leased"]
    assert doc["origin"] == "http://bad.test" and doc["in_ready_set"]
    assert doc["next_allowed_in_s"] > 3000  # parked: the longest back-off, an hour here
    assert doc["robots"]["cached"] and doc["robots"]["crawl_delay_s"] == 4.0
    assert any(line.startswith("parked: 3 failures in a row") for line in doc["why"])
    assert any("Crawl-delay 4s" in line for line in doc["why"])

    # the queue's next URLs as URLs: they were its raw entries ("0/2", the depth before the path)
    assert doc["next_urls"] == ["http://bad.test/1", "http://bad.test/2"]

    good = host_report(f.client, "wt", "good.test")
    assert good["failures"] == 0 and good["why"][0] == "due now: the next free fetcher takes it"
    assert not host_report(f.client, "wt", "never.test")["known"]

    lists = sample_hosts(f.client, "wt")
    assert lists["failing"][0]["host"] == "bad.test" and lists["failing"][0]["failures"] == 3
    assert {h["host"] for h in lists["slowest"]} == {"bad.test", "good.test"}

    # the command: text for a person, JSON for a script, one line of error for bad input
    text = trawl("status", "--redis", url, "--host", "BAD.test", "--park-after", "3").stdout
    assert text.startswith("host bad.test\n") and "  failures: 3\n" in text and "  - parked: 3 failures" in text
    assert "  crawl-delay: 4s\n" in text
    as_json = json.loads(trawl("status", "--redis", url, "--host", "bad.test", "--json").stdout)
    assert as_json["failures"] == 3 and as_json["queued"] == 2
