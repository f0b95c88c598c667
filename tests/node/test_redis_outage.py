"""A Redis restart under a running node (kill -9, AOF kept): the node pauses with one alert, reconnects, reloads its
scripts, goes on, and loses nothing. Checked where users see it: the access log (every page, politely), the
records, the node's log and its alert hook."""

from __future__ import annotations

from pathlib import Path

from tests.fixtures.restartable_redis import RestartableRedis
from tests.node.crawlrun import Crawl, records, wait_until
from tests.node.test_crawl import _args, _assert_complete_and_polite
from webtrawl.testweb import TestWeb

_LOST = "alert redis: lost the connection to Redis"
_BACK = "alert redis resolved: Redis is back"


def _logs(out: Path) -> str:
    return "".join(path.read_text(errors="replace") for path in sorted((out / "logs").glob("*.log*")))


def _waiting(out: Path) -> list[int]:
    """How many outages each fetcher has logged so far."""
    names = ("fetcher-0", "fetcher-1")
    return [(out / "logs" / f"{name}.log").read_text().count("Redis is away") for name in names]


def _alert_hook(tmp_path: Path) -> tuple[list[str], Path]:
    hooked = tmp_path / "alerts.txt"
    return ["--alert-cmd", f'echo "$TRAWL_ALERT_NAME $TRAWL_ALERT_STATE" >> {hooked}'], hooked


def test_an_external_redis_restarted_twice_under_a_running_node_loses_nothing(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    out = tmp_path / "crawl"
    hook, hooked = _alert_hook(tmp_path)
    crawl = Crawl(out, [*seeds, *_args(testweb, "--redis", restartable_redis.url, *hook)])
    for outage in (1, 2):
        stored = len(records(out))
        wait_until(lambda: len(records(out)) >= stored + 150, 300, "150 more records", crawl)  # noqa: B023
        restartable_redis.kill()
        wait_until(lambda: crawl.log().count(_LOST) == outage, 60, "the node to report the outage", crawl)  # noqa: B023
        # down until both fetchers have met the outage (each logs it once in its own file; a parser with no page
        # to store has nothing to ask Redis)
        wait_until(lambda: _waiting(out) == [outage] * 2, 60, "the fetchers to wait for Redis", crawl)  # noqa: B023
        restartable_redis.start()
        wait_until(lambda: crawl.log().count(_BACK) == outage, 60, "the node to see Redis back", crawl)  # noqa: B023
    assert crawl.wait(600) == 0, crawl.log()[-4000:]

    log = crawl.log()
    assert log.count(_LOST) == 2 and "Traceback" not in log, log[-4000:]
    assert "Traceback" not in _logs(out) and "fetch task failed" not in _logs(out)
    assert hooked.read_text().split("\n").count("redis firing") == 2
    duplicates = _assert_complete_and_polite(testweb, seeds, mark)  # every page, politely
    urls = [row["url"] for row in records(out)]
    assert set(testweb.model.expected_crawl(seeds).fetched) <= set(urls)
    assert duplicates == {} and len(urls) == len(set(urls)), duplicates
