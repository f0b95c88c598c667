"""A parser or the whole node killed inside a batch, at the two points the parsers' batch log tells apart: the
batch's files written but its URLs not completed (a user sink holds the parser inside its fan-out: the next life
cuts the files back) and its completion on the way to Redis (the loopback relay holds it: the node's next start
completes the URLs). Either way every page ends with one record and one WARC response.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

from tests.fixtures.fault_proxy import FaultProxy
from tests.fixtures.restartable_redis import RestartableRedis
from tests.node.crawlrun import (
    Crawl,
    assert_complete_and_polite,
    assert_one_record_a_page,
    node_args,
    records,
    wait_until,
)
from webtrawl.frontier.scripts import SCRIPTS
from webtrawl_testweb import TestWeb

GATE_SINK = "tests.fixtures.usersink:GateSink"


def _held_in_a_batch(gate: Path, crawl: Crawl) -> int:
    """Arm the gate sink; the pid of the parser it then holds inside a batch (its files written, nothing completed)."""
    Path(f"{gate}.arm").touch()
    held = Path(f"{gate}.held")
    wait_until(held.exists, 120, "a parser held inside a batch", crawl)
    return int(held.read_text())


def test_kill_9_of_a_parser_inside_a_batch_leaves_one_record_a_page(testweb: TestWeb, tmp_path: Path) -> None:
    """Killed after its batch's records and WARC records were written, before its URLs were completed: its next
    life cuts the files back (the batch log), so the pages fetched again are recorded once, not twice."""
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    out, gate = tmp_path / "crawl", tmp_path / "gate"
    crawl = Crawl(out, [*seeds, *node_args(testweb, "--records-to", f"{GATE_SINK}?gate={gate}")])
    wait_until(lambda: len(records(out)) >= 50, 300, "50 records", crawl)
    victim = _held_in_a_batch(gate, crawl)
    written = len(records(out))  # the held batch's lines are among them
    os.kill(victim, signal.SIGKILL)
    assert crawl.wait(600) == 0, crawl.log()[-4000:]

    assert len(records(out)) > written
    assert_one_record_a_page(out)
    logs = "".join(path.read_text() for path in (out / "logs").glob("parser-*.log"))
    assert "rolled back a batch a killed parser had begun" in logs, logs[-3000:]
    assert_complete_and_polite(testweb, seeds, mark)
    assert set(testweb.model.expected_crawl(seeds).fetched) <= {row["url"] for row in records(out)}


def test_kill_9_of_the_node_inside_a_batch_then_resume_leaves_one_record_a_page(
    testweb: TestWeb, tmp_path: Path
) -> None:
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    out, gate = tmp_path / "crawl", tmp_path / "gate"
    crawl = Crawl(out, [*seeds, *node_args(testweb, "--records-to", f"{GATE_SINK}?gate={gate}")])
    wait_until(lambda: len(records(out)) >= 50, 300, "50 records", crawl)
    _held_in_a_batch(gate, crawl)
    crawl.kill_node()

    resume = Crawl(out, node_args(testweb, "--records-to", f"{GATE_SINK}?gate={gate}"), log_name="resume.log")
    assert resume.wait(600) == 0, resume.log()[-4000:]
    assert_one_record_a_page(out)
    assert "rolled back a batch a killed parser had begun" in resume.log(), resume.log()[-3000:]
    assert_complete_and_polite(testweb, seeds, mark)
    assert set(testweb.model.expected_crawl(seeds).fetched) <= {row["url"] for row in records(out)}


def test_kill_9_of_the_node_once_a_batch_is_stored_then_resume_completes_it(
    testweb: TestWeb, restartable_redis: RestartableRedis, tmp_path: Path
) -> None:
    """Killed with a batch's outputs written and its links added, its completion on the way to Redis (held by the
    relay): the next start completes those URLs from the batch log before it takes back the killed run's leases, so
    they are neither fetched nor written again."""
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    out = tmp_path / "crawl"
    complete = b"EVALSHA\r\n$40\r\n" + SCRIPTS["complete"].sha.encode()
    with FaultProxy(restartable_redis.port) as proxy:
        crawl = Crawl(out, [*seeds, *node_args(testweb, "--redis", proxy.url())])
        wait_until(lambda: len(records(out)) >= 50, 300, "50 records", crawl)
        held = proxy.hold_on(complete)
        wait_until(held.is_set, 120, "a completion held on its way to Redis", crawl)
        crawl.kill_node()

    resume = Crawl(out, node_args(testweb, "--redis", restartable_redis.url), log_name="resume.log")
    assert resume.wait(600) == 0, resume.log()[-4000:]
    assert_one_record_a_page(out)
    assert re.search(r"completed the [1-9]\d* page\(s\) a killed parser had stored", resume.log()), resume.log()
    assert_complete_and_polite(testweb, seeds, mark)
    assert set(testweb.model.expected_crawl(seeds).fetched) <= {row["url"] for row in records(out)}
