"""A Redis that runs out of memory under a long crawl, and one configured to make room by deleting keys.

At its ``maxmemory`` with ``noeviction`` Redis refuses the writes that need memory (``OOM command not allowed``): the
node must say so (one ``redis-full`` alert), stop leasing, wait in every process instead of dying with a traceback,
and go on by itself once Redis has room again, losing nothing. A Redis whose ``maxmemory-policy`` evicts keys
would silently delete queued URLs and the seen filter: the crawl refuses it at start. Real redis-server processes
on their own ports, the real test web."""

from __future__ import annotations

import subprocess
from pathlib import Path

import redis

from tests.fixtures.restartable_redis import RestartableRedis
from tests.node.clusterrun import TRAWL
from tests.node.crawlrun import (
    Crawl,
    assert_complete_and_polite,
    node_args,
    node_logs,
    records,
    stopped_at_end,
    wait_until,
)
from webtrawl_testweb import TestWeb

_FULL = "alert redis-full: Redis at redis://127.0.0.1:"
_ROOM = "alert redis-full resolved:"


def _config(server: RestartableRedis, name: str, value: str) -> None:
    client = redis.Redis(port=server.port)
    try:
        client.config_set(name, value)
    finally:
        client.close()


def test_redis_at_its_maxmemory_pauses_the_crawl_which_goes_on_when_it_has_room(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    hooked = tmp_path / "alerts.txt"
    hook = ["--alert-cmd", f'echo "$TRAWL_ALERT_NAME $TRAWL_ALERT_STATE" >> {hooked}']
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*seeds, *node_args(testweb, "--redis", restartable_redis.url, *hook)])
    with stopped_at_end(crawl):
        wait_until(lambda: len(records(out)) >= 100, 300, "100 records", crawl)
        _config(restartable_redis, "maxmemory", "1")  # far below what it uses: every write that needs memory fails
        wait_until(lambda: _FULL in crawl.log(), 60, "the redis-full alert", crawl)
        assert crawl.proc.poll() is None, crawl.log()[-4000:]  # waiting, not dead
        assert "leasing paused until it has room" in crawl.log()
        _config(restartable_redis, "maxmemory", "0")
        assert crawl.wait(600) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert log.count(_FULL) == 1 and log.count(_ROOM) == 1, log[-4000:]
    assert "Traceback" not in log and "Traceback" not in node_logs(out), (log + node_logs(out))[-4000:]
    assert "fetch task failed" not in node_logs(out)
    assert hooked.read_text().split("\n").count("redis-full firing") == 1
    duplicates = assert_complete_and_polite(testweb, seeds, mark)
    urls = [row["url"] for row in records(out)]
    assert set(testweb.model.expected_crawl(seeds).fetched) <= set(urls)
    assert len(urls) == len(set(urls)), duplicates


def _trawl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TRAWL, *args], capture_output=True, text=True, timeout=120)


def test_a_redis_that_evicts_keys_when_full_is_refused(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    _config(restartable_redis, "maxmemory", "1gb")
    _config(restartable_redis, "maxmemory-policy", "allkeys-lru")
    crawl = Crawl(tmp_path / "crawl", [*testweb.seeds(1), *node_args(testweb, "--redis", restartable_redis.url)])
    assert crawl.wait(120) == 3
    log = crawl.log()
    assert "trawl: error: Redis at redis://127.0.0.1:" in log and "maxmemory-policy allkeys-lru" in log, log
    assert "noeviction" in log and "Traceback" not in log
    seeded = _trawl("seed", "--redis", restartable_redis.url, "--url", "http://site0.test/")
    assert seeded.returncode == 3 and "maxmemory-policy allkeys-lru" in seeded.stderr, seeded.stderr
    assert "Traceback" not in seeded.stderr
    assert redis.Redis(port=restartable_redis.port).dbsize() == 0  # refused before it wrote a key

    _config(restartable_redis, "maxmemory-policy", "noeviction")
    crawl = Crawl(tmp_path / "crawl2", [*testweb.seeds(1), *node_args(testweb, "--redis", restartable_redis.url)])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]


def test_a_redis_too_full_to_create_the_crawl_is_one_clear_error(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    _config(restartable_redis, "maxmemory", "1")
    crawl = Crawl(tmp_path / "crawl", [*testweb.seeds(1), *node_args(testweb, "--redis", restartable_redis.url)])
    assert crawl.wait(120) == 3
    log = crawl.log()
    assert "trawl: error: Redis at redis://127.0.0.1:" in log and "is full" in log, log
    assert "Traceback" not in log
