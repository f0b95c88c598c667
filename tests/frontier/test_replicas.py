"""--redis-replicas N: the parsers' add calls are followed by WAIT N on each master they wrote to (same connection),
so a page's links are on N replicas before the page is completed; a replica that does not answer in time is one
log line, not a stuck crawl."""

from __future__ import annotations

import logging

import pytest
import redis

import webtrawl.frontier.replicas as barrier
from tests.fixtures.redis_fixtures import TEST_SETTINGS, FrontierFactory
from tests.frontier.helpers import new_urls
from webtrawl.config import load
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.frontier.replicas import replicas_of
from webtrawl_testweb.local_cluster import LocalRedisCluster


@pytest.fixture(autouse=True)
def _fresh_acks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The barrier's memory of short masters and of its last line is per process: a WAIT that fell short in an
    earlier test (a fresh replica not yet synced, a loaded machine) would skip this test's WAIT or its line."""
    monkeypatch.setattr(barrier, "_short_until", {})


def _waits(port: int) -> int:
    client = redis.Redis(port=port)
    try:
        return int(client.info("commandstats").get("cmdstat_wait", {}).get("calls", 0))
    finally:
        client.close()


def test_adds_wait_for_the_replicas_of_every_master_they_wrote_to(replicated_cluster: LocalRedisCluster) -> None:
    client = connect_sync(replicated_cluster.url, cluster=True)
    f = RedisFrontier.open(client, FrontierSettings(**{**TEST_SETTINGS, "shards": 16}))
    assert (replicas_of(client, -1), replicas_of(client, 0), replicas_of(client, 2)) == (1, 0, 2)  # auto: 1 each
    masters = replicated_cluster.ports[: replicated_cluster.masters]
    before = [_waits(port) for port in masters]
    f.add(new_urls(*(f"http://h{i}.test/" for i in range(200))))  # no barrier by default
    assert [_waits(port) for port in masters] == before
    f.replicas = 1
    result = f.add(new_urls(*(f"http://h{i}.test/" for i in range(200, 400))))
    assert result.added == 200
    assert all(after > was for after, was in zip([_waits(port) for port in masters], before, strict=True))
    client.close()


def test_a_replica_that_is_not_there_costs_a_timeout_and_one_line(
    frontier: FrontierFactory, caplog: pytest.LogCaptureFixture
) -> None:
    f = frontier()  # the session's single server: no replica
    assert replicas_of(f.client, -1) == 0  # auto: no barrier
    assert (
        load({}, env={}).frontier.redis_replicas
        == -1
        == load({"redis_replicas": "auto"}, env={}).frontier.redis_replicas
    )
    f.replicas = 1
    with caplog.at_level(logging.WARNING, logger="webtrawl.frontier"):
        assert f.add(new_urls("http://a.test/1")).added == 1
    assert "only 0 of 1 Redis replicas acknowledged" in caplog.text
