"""A Redis restart under a running node (kill -9, AOF kept): the node pauses with one alert, reconnects, reloads its
scripts, goes on, and loses nothing. Checked where users see it: the access log (every page, politely), the
records, the node's log and its alert hook."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from tests.fixtures.restartable_redis import RestartableRedis
from tests.fixtures.sentinel_redis import SentinelPair
from tests.node.crawlrun import Crawl, assert_complete_and_polite, node_args, records, wait_until
from webtrawl_testweb import TestWeb

_LOST = "alert redis: lost the connection to Redis"
_BACK = "alert redis resolved: Redis is back"


@contextlib.contextmanager
def _running(crawl: Crawl) -> Iterator[Crawl]:
    """The crawl, killed if the test fails before it ended (a failed test must not leave a node running)."""
    try:
        yield crawl
    finally:
        if crawl.proc.poll() is None:
            crawl.kill_node()


def _logs(out: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in sorted((out / "logs").glob("*.log*")))


def _waiting(out: Path) -> list[int]:
    """How many outages each fetcher has logged so far."""
    names = ("fetcher-0", "fetcher-1")
    return [(out / "logs" / f"{name}.log").read_text().count("; waiting for it") for name in names]


def _crawl(web: TestWeb, tmp_path: Path, *extra: str) -> tuple[Crawl, list[str], int, Path]:
    """A crawl of the test web with an alert hook: (the crawl, its seeds, the access log mark, the hook's file)."""
    seeds = web.seeds(3)
    mark = web.mark()
    hooked = tmp_path / "alerts.txt"
    hook = ["--alert-cmd", f'echo "$TRAWL_ALERT_NAME $TRAWL_ALERT_STATE" >> {hooked}']
    return Crawl(tmp_path / "crawl", [*seeds, *node_args(web, *extra, *hook)]), seeds, mark, hooked


def test_an_external_redis_restarted_twice_under_a_running_node_loses_nothing(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    crawl, seeds, mark, hooked = _crawl(testweb, tmp_path, "--redis", restartable_redis.url)
    with _running(crawl):
        _restart_twice(crawl, restartable_redis)
    _check_lossless(crawl, testweb, seeds, mark, hooked, outages=2)


def _restart_twice(crawl: Crawl, server: RestartableRedis) -> None:
    out = crawl.out
    for outage in (1, 2):
        stored = len(records(out))
        wait_until(lambda: len(records(out)) >= stored + 150, 300, "150 more records", crawl)  # noqa: B023
        server.kill()
        wait_until(lambda: crawl.log().count(_LOST) == outage, 60, "the node to report the outage", crawl)  # noqa: B023
        # down until both fetchers have met the outage (each logs it once in its own file; a parser with no page
        # to store has nothing to ask Redis)
        wait_until(lambda: _waiting(out) == [outage] * 2, 60, "the fetchers to wait for Redis", crawl)  # noqa: B023
        time.sleep(3.0)  # the scenario, not a race: the server stays down a while (the nodes' back-off grows)
        server.start()
        wait_until(lambda: crawl.log().count(_BACK) == outage, 60, "the node to see Redis back", crawl)  # noqa: B023
    assert crawl.wait(600) == 0, crawl.log()[-4000:]


def _check_lossless(crawl: Crawl, web: TestWeb, seeds: list[str], mark: int, hooked: Path, outages: int) -> None:
    """Every page fetched once, politely, one record each; one alert (and its log line) per outage, no traceback."""
    log = crawl.log()
    assert log.count(_LOST) == outages and log.count(_BACK) == outages and "Traceback" not in log, log[-4000:]
    assert "Traceback" not in _logs(crawl.out) and "fetch task failed" not in _logs(crawl.out)
    assert hooked.read_text().split("\n").count("redis firing") == outages
    duplicates = assert_complete_and_polite(web, seeds, mark)
    urls = [row["url"] for row in records(crawl.out)]
    assert set(web.model.expected_crawl(seeds).fetched) <= set(urls)
    assert duplicates == {} and len(urls) == len(set(urls)), duplicates


def test_the_embedded_redis_killed_9_is_started_again_and_the_crawl_loses_nothing(
    testweb: TestWeb, tmp_path: Path
) -> None:
    crawl, seeds, mark, hooked = _crawl(testweb, tmp_path)
    out = crawl.out
    with _running(crawl):
        wait_until(lambda: len(records(out)) >= 150, 300, "150 records", crawl)
        os.kill(int((out / "redis" / "redis.pid").read_text()), signal.SIGKILL)  # as the OOM killer would
        assert crawl.wait(600) == 0, crawl.log()[-4000:]
    assert "the embedded redis-server died; starting it again" in _logs(out)
    _check_lossless(crawl, testweb, seeds, mark, hooked, outages=1)


def test_a_stop_while_redis_is_away_ends_the_node_without_hanging(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    out = tmp_path / "crawl"
    args = [*testweb.seeds(3), *node_args(testweb, "--redis", restartable_redis.url, "--max-time", "20")]
    with _running(Crawl(out, args)) as crawl:
        wait_until(lambda: len(records(out)) >= 30, 300, "30 records", crawl)
        restartable_redis.kill()  # and never back: --max-time comes while the node waits for it
        assert crawl.wait(60) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert log.count(_LOST) == 1 and "stopping: --max-time 20s reached" in log and "Traceback" not in log, log
    assert "Traceback" not in _logs(out)


def test_a_sentinel_managed_master_killed_9_fails_over_and_the_crawl_loses_nothing(
    testweb: TestWeb, sentinel_pair: SentinelPair, tmp_path: Path
) -> None:
    crawl, seeds, mark, hooked = _crawl(testweb, tmp_path, "--redis", sentinel_pair.url)
    out = crawl.out
    with _running(crawl):
        wait_until(lambda: len(records(out)) >= 150, 300, "150 records", crawl)
        sentinel_pair.kill_master()
        wait_until(lambda: sentinel_pair.master()[1] == sentinel_pair.replica_port, 60, "the promotion", crawl)
        assert crawl.wait(600) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert log.count(_LOST) == 1 and log.count(_BACK) == 1 and "Traceback" not in log, log[-4000:]
    assert "Traceback" not in _logs(crawl.out) and "fetch task failed" not in _logs(crawl.out)
    assert hooked.read_text().split("\n").count("redis firing") == 1
    assert_complete_and_polite(testweb, seeds, mark)  # a page acknowledged but not yet replicated may come twice
    assert set(testweb.model.expected_crawl(seeds).fetched) <= {row["url"] for row in records(out)}
