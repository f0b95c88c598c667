"""End to end: the real ``trawl crawl`` (embedded Redis, fetchers, parsers) against the real local test web.

What a user relies on is checked where it is visible: in the test server's access log (every expected page fetched
once, politeness gaps, robots.txt first, nothing disallowed), in the WARC files read back with warcio, and in the
JSONL records. A crawl, a kill -9 of the whole node, and the ways to stop one; test_crawl_kill.py kills its children.
"""

from __future__ import annotations

import contextlib
import os
import random
import select
import signal
import subprocess
import threading
from pathlib import Path

import pytest

from tests.node.clusterrun import TRAWL
from tests.node.crawlrun import (
    Crawl,
    assert_complete_and_polite,
    crawl_until,
    node_args,
    records,
    resume_to_the_end,
    running,
    stats,
    wait_until,
    warc_responses,
)
from webtrawl_testweb import TestWeb


def test_crawl_fetches_every_reachable_page_once_politely(testweb: TestWeb, tmp_path: Path) -> None:
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*seeds, *node_args(testweb)])
    assert crawl.wait(600) == 0, crawl.log()[-4000:]

    assert assert_complete_and_polite(testweb, seeds, mark) == {}
    expected = testweb.model.expected_crawl(seeds)
    assert len(expected.fetched) > 1000  # a web of 200+ hosts, not a toy

    # Every fetched page is in the WARC exactly once, as warcio reads it.
    responses = warc_responses(out)
    uris = [uri for uri, _ in responses]
    assert len(uris) == len(set(uris))
    assert set(expected.fetched) <= set(uris)

    # One JSONL record per URL; disallowed URLs are recorded with their reason, not silently dropped.
    rows = records(out)
    urls = [row["url"] for row in rows]
    assert len(urls) == len(set(urls))
    by_url = {row["url"]: row for row in rows}
    for url in expected.disallowed:
        if url in by_url:
            assert by_url[url]["error"] == "robots"
    for url in expected.unavailable:
        if url in by_url:
            assert by_url[url]["error"] == "robots-unavailable"
    assert {row["error"] for row in rows if row["url"] in expected.fetched} <= {None, ""}

    counters = stats(out)["counters"]
    assert counters["queued"] == 0 and counters["inflight"] == 0
    assert counters["stored"] == len(rows)

    # Host sessions: a fetcher keeps a host for its next pages and sends them over the connection it has open
    # (the server sees one client port per connection), each after the host's delay (checked above).
    assert counters.get("session-leases", 0) > len(expected.fetched) // 2
    entries = testweb.entries(since=mark)
    connections = {(e.host, e.port, e.client_port) for e in entries}
    assert len(entries) >= 3 * len(connections), f"{len(entries)} requests over {len(connections)} connections"


def test_kill_9_of_the_whole_node_then_resume_loses_nothing(testweb: TestWeb, tmp_path: Path) -> None:
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    out = tmp_path / "crawl"
    expected = testweb.model.expected_crawl(seeds)
    kill_after = random.Random(os.getpid()).randint(len(expected.fetched) // 10, len(expected.fetched) // 2)
    crawl = Crawl(out, [*seeds, *node_args(testweb)])
    wait_until(lambda: len(records(out)) >= kill_after, 300, f"{kill_after} records", crawl)
    crawl.kill_node()

    resume_to_the_end(testweb, out, seeds, mark)


def _read_until(fd: int, stop: threading.Event) -> None:
    """A terminal's reader: takes what the node writes to it, so that the node never blocks on a full tty."""
    while not stop.is_set():
        if select.select([fd], [], [], 0.05)[0]:
            with contextlib.suppress(OSError):
                os.read(fd, 65536)


def _redis_pid(out: Path) -> int:
    return int((out / "redis" / "redis.pid").read_text())


def test_a_closed_terminal_drains_the_node_and_the_same_command_resumes_it(testweb: TestWeb, tmp_path: Path) -> None:
    """A closed window or a dropped ssh session hangs up the node's terminal: SIGHUP drains the node as SIGTERM
    does (README), its embedded Redis is shut down, not left running, and the same command resumes the crawl,
    nothing lost or stored twice."""
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    out = tmp_path / "crawl"
    terminal, tty = os.openpty()
    crawl = Crawl(out, [*seeds, *node_args(testweb)], terminal=tty)
    os.close(tty)
    stop_reading = threading.Event()
    reader = threading.Thread(target=_read_until, args=(terminal, stop_reading), daemon=True)
    reader.start()
    try:
        wait_until(lambda: len(records(out)) >= 50, 300, "50 records", crawl)
        children = crawl.children().values()
        redis_pid = _redis_pid(out)
    finally:
        stop_reading.set()
        reader.join()
        os.close(terminal)  # the hang-up
    assert crawl.wait(60) == 0
    assert not any(running(pid) for pid in [*children, redis_pid])
    assert stats(out)["counters"]["inflight"] == 0  # drained: nothing left leased

    resume_to_the_end(testweb, out, seeds, mark)


def test_a_hang_up_sent_to_the_whole_process_group_drains_the_node_once(testweb: TestWeb, tmp_path: Path) -> None:
    """The shell passes a hang-up on to every process of its jobs, and may send it twice: the children and their
    fork server leave the stop to the supervisor, which drains once and exits 0, not at once as on a second Ctrl-C."""
    _seeds, _mark, out, crawl = crawl_until(testweb, tmp_path, 50)
    crawl.interrupt(signal.SIGHUP)
    wait_until(lambda: "stopping (SIGHUP)" in crawl.log(), 60, "the drain to begin", crawl)
    crawl.interrupt(signal.SIGHUP)
    assert crawl.wait(60) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert "died" not in log and "quitting at once" not in log, log[-4000:]
    assert stats(out)["counters"]["inflight"] == 0


def test_trawl_stop_out_drains_a_crawl_on_this_machine_and_a_resume_is_not_stopped_by_it(
    testweb: TestWeb, tmp_path: Path
) -> None:
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*testweb.seeds(3), *node_args(testweb)])
    wait_until(lambda: len(records(out)) >= 50, 300, "50 records", crawl)
    asked = subprocess.run([*TRAWL, "stop", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert (asked.returncode, asked.stdout) == (0, f"asked the crawl in {out} to drain and exit\n"), asked.stderr
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    assert "stopping: trawl stop requested" in crawl.log()
    first = stats(out)["counters"]
    assert first["inflight"] == 0  # drained: nothing left leased
    assert first["queued"] > 0  # and stopped early

    # The stop asked of the first run is not heard again by the next one: it crawls until its own limit.
    resume = Crawl(out, [*node_args(testweb), "--max-pages", str(first["stored"] + 20)], log_name="resume.log")
    assert resume.wait(300) == 0, resume.log()[-4000:]
    assert "stopping: --max-pages" in resume.log()
    assert "trawl stop requested" not in resume.log()
    assert stats(out)["counters"]["fetched"] > first["fetched"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "systemctl-stop"])
def test_a_stop_signal_to_the_whole_process_group_drains_cleanly_and_resume_continues(
    signum: signal.Signals, testweb: TestWeb, tmp_path: Path
) -> None:
    """Ctrl-C at a terminal, or 'systemctl stop' (SIGTERM to every process of the unit): the children leave the
    stop to the supervisor, which drains them."""
    seeds, mark, out, crawl = crawl_until(testweb, tmp_path, 150)
    crawl.interrupt(signum)
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    first = stats(out)["counters"]
    assert first["inflight"] == 0  # drained: nothing left leased
    assert first["queued"] > 0  # and stopped early: there is work left to resume

    resume = Crawl(out, node_args(testweb), log_name="resume.log")
    assert resume.wait(600) == 0, resume.log()[-4000:]
    # A clean drain hands over everything: no page is fetched twice, no record written twice.
    assert assert_complete_and_polite(testweb, seeds, mark) == {}
    urls = [row["url"] for row in records(out)]
    assert len(urls) == len(set(urls))
