"""A child that dies at start over and over stops the node with its error; one killed from outside is restarted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.node.crawlrun import wait_until
from webtrawl.errors import ChildFailed
from webtrawl.node.children import START_FAILURES, Child, Children


def _restart_until_failed(children: Children) -> tuple[list[str], ChildFailed]:
    messages: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            messages += children.restart_dead()
        except ChildFailed as exc:
            return messages, exc
        time.sleep(0.05)
    raise AssertionError(f"never gave up: {messages}")


def test_a_child_that_dies_at_start_stops_after_a_few_tries_with_its_error() -> None:
    children = Children()
    children.add(Child("fetcher", 0, "tests.node.failing_child:fail_at_start", "/data/x"))
    messages, failed = _restart_until_failed(children)
    assert len(messages) == START_FAILURES - 1  # restarted, then given up on: not restarted forever
    assert "OSError: cannot open /data/x: Permission denied" in messages[0]
    assert str(failed) == (
        f"fetcher-0 died at start {START_FAILURES} times in a row: OSError: cannot open /data/x: Permission denied"
    )


def test_a_child_that_cannot_reach_redis_is_restarted_on() -> None:
    """Redis away (restarting, failing over) is outlived by restarting: not a crash loop to stop the node for."""
    children = Children()
    children.add(Child("parser", 0, "tests.node.failing_child:lose_redis", "redis://127.0.0.1:1"))
    deaths: list[str] = []
    deadline = time.monotonic() + 120
    while len(deaths) < START_FAILURES + 2 and time.monotonic() < deadline:
        deaths += children.restart_dead()  # never raises ChildFailed
        time.sleep(0.05)
    assert "cannot reach Redis at redis://127.0.0.1:1" in deaths[0]
    children.kill()


def test_children_and_their_restarts_start_with_their_stages_loaded(tmp_path: Path) -> None:
    """Forks of the fork server, which imported the stages once: a child (a restart too) does not import them again."""
    out = tmp_path / "modules"
    children = Children()
    children.add(Child("parser", 0, "tests.node.failing_child:write_loaded_modules", str(out)))
    for _ in range(2):  # the first start, then a restart
        wait_until(lambda: not children.members[0].alive(), 60, "the child's exit")
        loaded = set(out.read_text().split())
        assert {"webtrawl.fetch.worker", "webtrawl.parse.worker", "aiohttp", "selectolax"} <= loaded
        out.unlink()
        children.restart_dead()


def _run_to_its_end(child: Child) -> None:
    children = Children()  # held: its lifeline's end is what keeps the child alive
    children.add(child)
    try:
        wait_until(lambda: not child.alive(), 60, f"{child.name}'s exit")
    finally:
        children.close()


def test_a_child_sees_the_environment_of_its_start_not_the_fork_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As with ``spawn``: an application that sets a variable (MYSQL_PWD, a proxy) before its next crawl is heard."""
    out = tmp_path / "value"
    for value in ("first", "second"):  # the fork server is running by the second start
        monkeypatch.setenv("TRAWL_TEST_CHILD_ENV", value)
        target = "tests.node.failing_child:write_environment_variable"
        _run_to_its_end(Child("parser", 0, target, ("TRAWL_TEST_CHILD_ENV", str(out))))
        assert out.read_text() == value


def test_a_child_killed_from_outside_is_restarted_every_time() -> None:
    children = Children()
    children.add(Child("parser", 0, "tests.node.failing_child:run_a_while", "60"))
    try:
        for kill in range(START_FAILURES + 1):
            pid = children.pids("parser")[0]
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not children.members[0].alive(), 30, f"death after kill {kill}")
            assert "killed by signal 9" in children.restart_dead()[0]
    finally:
        children.kill()


def test_children_end_when_the_node_closes_their_pipes_as_at_its_death() -> None:
    children = Children()
    for i in range(2):
        children.add(Child("parser", i, "tests.node.failing_child:run_a_while", "60"))
    try:
        assert len(children.pids("parser")) == 2
        children.close()  # what the kernel does to the supervisor's fds when it dies
        wait_until(lambda: not any(c.alive() for c in children.members), 30, "the children to end")
        assert [c.process.exitcode for c in children.members if c.process] == [-signal.SIGKILL] * 2
    finally:
        children.kill()


def test_a_node_whose_fetcher_cannot_start_exits_with_its_error(tmp_path: Path) -> None:
    """Issue 19: a fetcher that died at start was restarted forever (and with --max-time the crawl exited 0)."""
    out = tmp_path / "c"
    (out / "logs" / "fetcher-0.log").mkdir(parents=True)  # its log file cannot be opened: it dies at start
    local = ["--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", "1"]  # never off this machine
    cmd = [sys.executable, "-m", "webtrawl", "crawl", "http://site1.test:1/", "--out", str(out), *local]
    cmd += ["--fetchers", "1", "--parsers", "1", "--max-time", "60", "--progress", "off"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 1, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"trawl: error: fetcher-0 died at start {START_FAILURES} times in a row: IsADirectoryError")
    assert str(out / "logs" / "fetcher-0.log") in last
    assert result.stderr.count("Traceback") == START_FAILURES
