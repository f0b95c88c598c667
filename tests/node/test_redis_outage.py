"""A Redis restart under a running node (kill -9, AOF kept): the node pauses with one alert, reconnects, reloads its
scripts, goes on, and loses nothing. Checked where users see it: the access log (every page, politely), the
records, the node's log, its alert hook and its dashboard; and the crawl's dashboard (``trawl status --serve``)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import redis

from tests.fixtures.restartable_redis import RestartableRedis
from tests.fixtures.sentinel_redis import SentinelPair
from tests.node.clusterrun import TRAWL, trawl
from tests.node.crawlrun import (
    Crawl,
    assert_complete_and_polite,
    free_port,
    node_args,
    node_logs,
    records,
    stopped_at_end,
    wait_until,
)
from webtrawl_testweb import TestWeb

_LOST = "alert redis: lost the connection to Redis"
_BACK = "alert redis resolved: Redis is back"


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
    ui_port = free_port()
    crawl, seeds, mark, hooked = _crawl(testweb, tmp_path, "--redis", restartable_redis.url, "--ui-port", str(ui_port))
    with stopped_at_end(crawl):
        _restart_twice(crawl, restartable_redis, ui_port)
    _check_lossless(crawl, testweb, seeds, mark, hooked, outages=2)


def _dashboard(port: int) -> dict[str, Any]:
    """What the node's dashboard shows now (``{}`` while it does not answer)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=5) as answer:
            doc: dict[str, Any] = json.loads(answer.read() or b"{}")
            return doc
    except (OSError, ValueError):
        return {}


def _shows_redis_alert(port: int) -> bool:
    doc = _dashboard(port)
    return any(a["name"] == "redis" for a in (doc.get("alerts") or {}).get("active", []))


def _restart_twice(crawl: Crawl, server: RestartableRedis, ui_port: int) -> None:
    out = crawl.out
    for outage in (1, 2):
        stored = len(records(out))
        wait_until(lambda: len(records(out)) >= stored + 150, 300, "150 more records", crawl)  # noqa: B023
        server.kill()
        wait_until(lambda: crawl.log().count(_LOST) == outage, 60, "the node to report the outage", crawl)  # noqa: B023
        # whoever watches the node's dashboard learns of the outage there too, not from figures that stopped moving
        wait_until(lambda: _shows_redis_alert(ui_port), 30, "the dashboard to show the outage", crawl)
        assert _dashboard(ui_port)["state"] == "paused: Redis out of reach"
        # down until both fetchers have met the outage (each logs it once in its own file; a parser with no page
        # to store has nothing to ask Redis)
        wait_until(lambda: _waiting(out) == [outage] * 2, 60, "the fetchers to wait for Redis", crawl)  # noqa: B023
        time.sleep(3.0)  # the scenario, not a race: the server stays down a while (the nodes' back-off grows)
        server.start()
        wait_until(lambda: crawl.log().count(_BACK) == outage, 60, "the node to see Redis back", crawl)  # noqa: B023
        wait_until(lambda: not _shows_redis_alert(ui_port), 30, "the dashboard to drop the alert", crawl)
    assert crawl.wait(600) == 0, crawl.log()[-4000:]


def _check_lossless(crawl: Crawl, web: TestWeb, seeds: list[str], mark: int, hooked: Path, outages: int) -> None:
    """Every page fetched once, politely, one record each; one alert (and its log line) per outage, no traceback."""
    log = crawl.log()
    assert log.count(_LOST) == outages and log.count(_BACK) == outages and "Traceback" not in log, log[-4000:]
    assert "Traceback" not in node_logs(crawl.out) and "fetch task failed" not in node_logs(crawl.out)
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
    with stopped_at_end(crawl):
        wait_until(lambda: len(records(out)) >= 150, 300, "150 records", crawl)
        os.kill(int((out / "redis" / "redis.pid").read_text()), signal.SIGKILL)  # as the OOM killer would
        assert crawl.wait(600) == 0, crawl.log()[-4000:]
    assert "the embedded redis-server died; starting it again" in node_logs(out)
    _check_lossless(crawl, testweb, seeds, mark, hooked, outages=1)


def test_a_stop_while_redis_is_away_ends_the_node_without_hanging(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    out = tmp_path / "crawl"
    args = [*testweb.seeds(3), *node_args(testweb, "--redis", restartable_redis.url, "--max-time", "20")]
    with stopped_at_end(Crawl(out, args)) as crawl:
        wait_until(lambda: len(records(out)) >= 30, 300, "30 records", crawl)
        restartable_redis.kill()  # and never back: --max-time comes while the node waits for it
        assert crawl.wait(60) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert log.count(_LOST) == 1 and "stopping: --max-time 20s reached" in log and "Traceback" not in log, log
    assert "Traceback" not in node_logs(out)


def test_a_sentinel_managed_master_killed_9_fails_over_and_the_crawl_loses_nothing(
    testweb: TestWeb, sentinel_pair: SentinelPair, tmp_path: Path
) -> None:
    # A completion the dead master acknowledged but never replicated is sent again by its parser (resend.py): the
    # default --process-ttl (600 s; CI once had 27 such pages wait for it, past the test's 300 s) is never waited
    # out. A lease the failover lost is taken back after --lease-ttl: a short one, so that the test ends soon.
    ttls = ("--lease-ttl", "10", "--total", "5", "--robots", "5", "--render-timeout", "5")
    crawl, seeds, mark, hooked = _crawl(testweb, tmp_path, "--redis", sentinel_pair.url, *ttls)
    out = crawl.out
    with stopped_at_end(crawl):
        wait_until(lambda: len(records(out)) >= 150, 300, "150 records", crawl)
        sentinel_pair.kill_master()
        wait_until(lambda: sentinel_pair.master()[1] == sentinel_pair.replica_port, 60, "the promotion", crawl)
        assert crawl.wait(600) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert log.count(_LOST) == 1 and log.count(_BACK) == 1 and "Traceback" not in log, log[-4000:]
    assert "Traceback" not in node_logs(crawl.out) and "fetch task failed" not in node_logs(crawl.out)
    assert hooked.read_text().split("\n").count("redis firing") == 1
    # the promoted master has no replica now: one alert for the node, not a line a minute from every process
    assert hooked.read_text().split("\n").count("redis-replicas firing") == 1
    assert log.count("alert redis-replicas: Redis at") == 1 and "replicas acknowledged" not in log, log[-4000:]
    assert_complete_and_polite(testweb, seeds, mark)  # a page acknowledged but not yet replicated may come twice
    assert set(testweb.model.expected_crawl(seeds).fetched) <= {row["url"] for row in records(out)}


def test_the_crawl_dashboard_says_when_it_cannot_read_the_crawl(
    restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    """``trawl status --serve`` while the crawl's Redis is away: it goes on serving (it used to exit), keeps its last
    figures but says they are old and why, and drops the warning once Redis answers again."""
    trawl("seed", "--redis", restartable_redis.url, "--url", "http://site0.test/")
    port = free_port()
    serve = subprocess.Popen(
        [*TRAWL, "status", "--redis", restartable_redis.url, "--serve", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until(lambda: _dashboard(port).get("counters") is not None, 60, "the dashboard to show the crawl")
        assert not _shows_redis_alert(port)
        queued = _dashboard(port)["queued"]

        restartable_redis.kill()
        wait_until(lambda: _shows_redis_alert(port), 60, "the dashboard to say Redis is away")
        away = _dashboard(port)
        assert away["state"] == "Redis out of reach" and away["queued"] == queued  # the last figures, marked old

        restartable_redis.start()
        wait_until(lambda: not _shows_redis_alert(port), 60, "the warning to go once Redis is back")
    finally:
        serve.terminate()
        serve.wait(30)


def test_a_stop_while_a_sentinel_managed_redis_is_away_ends_the_node_without_hanging(
    testweb: TestWeb, sentinel_pair: SentinelPair, tmp_path: Path
) -> None:
    """With a replica the parsers keep their completions and, idle, read their watermarks (resend.py): an idle
    parser must still end when the node stops while Redis is away, as it does on a single server."""
    out = tmp_path / "crawl"
    args = [*testweb.seeds(3), *node_args(testweb, "--redis", sentinel_pair.url, "--max-time", "20")]
    with stopped_at_end(Crawl(out, args)) as crawl:
        wait_until(lambda: len(records(out)) >= 30, 300, "30 records", crawl)
        sentinel_pair.kill_master()
        sentinel_pair.kill_replica()  # and never back: --max-time comes while the node waits for them
        assert crawl.wait(60) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert log.count(_LOST) == 1 and "stopping: --max-time 20s reached" in log and "Traceback" not in log, log
    assert "did not finish" not in log and "Traceback" not in node_logs(out), log


def test_a_master_with_replicas_and_no_failover_guard_is_one_warning_at_start(
    testweb: TestWeb, sentinel_pair: SentinelPair, tmp_path: Path
) -> None:
    """Without ``min-replicas-to-write`` a planned Sentinel failover doubled pages and broke politeness
    (docs/deploy.md), which users learned only from that page: the node says it once at start."""
    guard = "no min-replicas-to-write"
    for name in ("bare", "guarded"):
        args = node_args(testweb, "--redis", sentinel_pair.url, "--max-pages", "3")
        crawl = Crawl(tmp_path / name, [*testweb.seeds(1), *args])
        assert crawl.wait(300) == 0, crawl.log()[-4000:]
        log = crawl.log()
        assert log.count(guard) == (1 if name == "bare" else 0), log[-4000:]
        if name == "bare":
            assert "has 1 replica(s)" in log and "min-replicas-to-write 1" in log
        master = redis.Redis(port=sentinel_pair.master_port)
        master.config_set("min-replicas-to-write", 1)
        master.config_set("min-replicas-max-lag", 10)
        master.close()


def test_a_master_refusing_writes_for_want_of_its_replica_pauses_the_crawl_until_it_is_back(
    testweb: TestWeb, sentinel_pair: SentinelPair, tmp_path: Path
) -> None:
    """A master with ``min-replicas-to-write`` (Redis's guard against a split brain) whose replica died answers
    every write NOREPLICAS: the node waits, with one alert, and goes on when the replica is back (its processes
    died on the ResponseError, over and over)."""
    master = redis.Redis(port=sentinel_pair.master_port)
    master.config_set("min-replicas-to-write", 1)
    master.config_set("min-replicas-max-lag", 1)
    url = f"redis://127.0.0.1:{sentinel_pair.master_port}"
    crawl, seeds, mark, hooked = _crawl(testweb, tmp_path, "--redis", url)
    out = crawl.out
    with stopped_at_end(crawl):
        wait_until(lambda: len(records(out)) >= 150, 300, "150 records", crawl)
        sentinel_pair.kill_replica()
        wait_until(lambda: "NOREPLICAS" in node_logs(out), 60, "the master to refuse writes", crawl)
        wait_until(lambda: "alert redis-replicas: Redis at" in crawl.log(), 60, "the node's alert", crawl)
        sentinel_pair.start_replica()
        assert crawl.wait(600) == 0, crawl.log()[-4000:]
    master.close()
    log = crawl.log()
    assert "Traceback" not in log and "Traceback" not in node_logs(out), node_logs(out)[-4000:]
    assert log.count("alert redis-replicas: Redis at") == 1 and _LOST not in log, log[-4000:]
    assert hooked.read_text().split("\n").count("redis-replicas resolved") == 1
    duplicates = assert_complete_and_polite(testweb, seeds, mark)
    urls = [row["url"] for row in records(out)]
    assert set(testweb.model.expected_crawl(seeds).fetched) <= set(urls)
    assert duplicates == {} and len(urls) == len(set(urls)), duplicates


def test_a_fetcher_restarted_while_redis_is_away_ends_quietly_at_a_stop(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    """A fetcher killed -9 while Redis is away starts again and waits for Redis to open its frontier; a stop then
    ended its wait with a traceback (RedisUnavailable out of the process) instead of a line."""
    out = tmp_path / "crawl"
    args = [*testweb.seeds(3), *node_args(testweb, "--redis", restartable_redis.url, "--max-time", "20")]
    with stopped_at_end(Crawl(out, args)) as crawl:
        wait_until(lambda: len(records(out)) >= 30, 300, "30 records", crawl)
        restartable_redis.kill()  # and never back
        os.kill(crawl.children()["fetcher-0"], signal.SIGKILL)
        wait_until(lambda: "fetcher-0 (pid" in crawl.log(), 60, "the fetcher restarted", crawl)
        assert crawl.wait(60) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert "stopping: --max-time 20s reached" in log and "Traceback" not in log, log
    assert "Traceback" not in node_logs(out)


_GATE = '''
import time
from pathlib import Path

HOLD = Path({hold!r})


def parse(page):
    """Holds a parser on a page while the test's file exists (the parser is busy, not idle, when Redis goes)."""
    if HOLD.exists():
        (HOLD.parent / "held").touch()
        while HOLD.exists():
            time.sleep(0.01)
    return {{"url": page.url}}
'''


def test_a_stop_while_redis_is_away_ends_a_busy_parser_with_a_line_not_a_kill(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    """A parser holding a batch when Redis went away waited for it until the node's stop killed it (an ERROR line,
    "parsers did not finish"); it gives up instead, as safely: its batch is completed on the next start."""
    hold, gate = tmp_path / "hold", tmp_path / "gate.py"
    gate.write_text(_GATE.format(hold=str(hold)))
    out, seeds, mark = tmp_path / "crawl", testweb.seeds(3), testweb.mark()
    args = [*seeds, *node_args(testweb, "--redis", restartable_redis.url, "--extract", f"{gate}:parse")]
    with stopped_at_end(Crawl(out, [*args, "--extract-timeout", "120"])) as crawl:
        wait_until(lambda: len(records(out)) >= 30, 300, "30 records", crawl)
        hold.touch()
        wait_until((tmp_path / "held").exists, 60, "a parser held on a page", crawl)
        restartable_redis.kill()  # and never back
        hold.unlink()  # the parser's batch now meets a Redis that is away
        wait_until(lambda: re.search(r"parser \d: Redis is", node_logs(out)), 60, "a parser waiting for Redis", crawl)
        crawl.interrupt()
        assert crawl.wait(60) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert "did not finish" not in log and "Traceback" not in log, log
    assert "stopped while Redis was away" in node_logs(out) and "Traceback" not in node_logs(out)
    restartable_redis.start()  # the same crawl resumed: what the parser gave up is done once, nothing twice
    with stopped_at_end(Crawl(out, args, log_name="resume.log")) as resumed:
        assert resumed.wait(600) == 0, resumed.log()[-4000:]
    assert_complete_and_polite(testweb, seeds, mark)  # pages it held are fetched again (leased), politely
    urls = [row["url"] for row in records(out)]
    items = [json.loads(line)["url"] for f in sorted((out / "items").glob("*.jsonl")) for line in f.open()]
    assert set(testweb.model.expected_crawl(seeds).fetched) <= set(urls)
    assert len(urls) == len(set(urls)) and sorted(items) == sorted(set(items)), "a page stored twice"
