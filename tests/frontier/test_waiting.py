"""What a crawl with nothing ready waits for: hosts in back-off, robots.txt retries, politeness delays (issue 19: a
crawl sat 13 minutes at 0.0/s with eta=- while it waited, correctly, on hosts whose robots.txt answered 503).
The counters are read by a read-only script: ``trawl stats`` works against a read-only replica."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis

from tests.fixtures.redis_fixtures import TEST_SETTINGS, FrontierFactory
from tests.fixtures.restartable_redis import RestartableRedis
from tests.frontier.helpers import elapse, new_urls, release
from webtrawl.frontier import FrontierSettings, RedisFrontier, UrlAction, connect_sync
from webtrawl.frontier.keys import shard_tag
from webtrawl.metrics.progress import compute
from webtrawl.names import WAIT_BACKOFF


def test_the_counters_say_which_hosts_wait_for_what_and_when_the_first_is_due(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://backoff.test/1", "http://robots.test/1", "http://polite.test/1", "http://polite.test/2"))
    leases = {x.host: x for x in f.lease("n/f0", 10)}
    release(f, [leases["backoff.test"]], UrlAction.RETRY, failed=True, retry_after_ms=250_000)
    release(f, [leases["robots.test"]], UrlAction.HEAD, delay_ms=60_000, robots_wait=True)
    release(f, [leases["polite.test"]], UrlAction.KEEP, delay_ms=5_000)
    c = f.counters()
    assert (c.ready_hosts, c.waiting_hosts, c.backoff_hosts, c.robots_hosts) == (0, 3, 1, 1)
    assert 240_000 < c.backoff_next_ms <= 250_001  # (the script rounds next-allowed times up)
    assert 50_000 < c.robots_next_ms <= 60_001
    assert 0 <= c.next_due_ms <= 5_001  # the politeness delay ends first
    progress = compute(c, 0.0)
    assert progress.waiting.startswith("waiting: 1 host in back-off, next retry in 4m")
    assert "; 1 host retrying robots.txt, next try in " in progress.waiting
    assert "; 1 host on their politeness delay, next host due in " in progress.waiting
    assert progress.eta_text == progress.waiting  # not '-'


def test_a_host_leaves_the_back_off_count_once_its_time_has_come(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2"))
    release(f, f.lease("n/f0", 1), UrlAction.RETRY, failed=True, retry_after_ms=1)
    elapse(f, "a.test")  # its back-off is over (instead of sleeping)
    backoff = shard_tag(f.core.settings.prefix, f.shard_of("a.test")) + WAIT_BACKOFF
    f.client.zadd(backoff, {"a.test": 0}, xx=True)
    c = f.counters()
    assert (c.backoff_hosts, c.backoff_next_ms) == (0, -1)
    assert compute(c, 0.0).waiting == ""  # a host is ready: the crawl is not waiting
    assert f.client.zcard(backoff) == 1  # reading the counters wrote nothing
    f.reclaim_expired()  # the shard's upkeep prunes it
    assert f.client.zcard(backoff) == 0


def test_the_counters_are_read_from_a_read_only_replica(restartable_redis: RestartableRedis, tmp_path: Path) -> None:
    settings = FrontierSettings(**{**TEST_SETTINGS, "prefix": "ro"})
    master = RedisFrontier.open(connect_sync(restartable_redis.url), settings)
    master.add(new_urls("http://backoff.test/1", "http://polite.test/1", "http://polite.test/2"))
    leases = {x.host: x for x in master.lease("n/f0", 10)}
    release(master, [leases["backoff.test"]], UrlAction.RETRY, failed=True, retry_after_ms=600_000)
    release(master, [leases["polite.test"]], UrlAction.KEEP, delay_ms=60_000)
    with RestartableRedis(tmp_path / "replica") as server:
        client = connect_sync(server.url)
        client.replicaof("127.0.0.1", restartable_redis.port)
        assert master.client.wait(1, 30_000) == 1  # the replica has everything written so far
        assert client.info("replication")["master_link_status"] == "up"
        with pytest.raises(redis.ReadOnlyError):
            client.set("x", "1")
        replica = RedisFrontier.open(client, settings, create=False)
        c, expected = replica.counters(), master.counters()
        assert (c.values, c.waiting_hosts, c.backoff_hosts) == (expected.values, 2, 1)
        assert 0 < c.backoff_next_ms <= 600_001
        client.close()
    master.client.close()
