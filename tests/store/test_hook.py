"""``--on-change CMD``: every change row runs CMD with the row on stdin, however slow CMD is or however large the
row, and a slow CMD never takes the crawl's parser hostage on a write."""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
from pathlib import Path

import pytest

from tests.node.crawlrun import running, wait_until
from tests.store.sinkdata import page
from webtrawl.hooks import Hooks
from webtrawl.store import PageOutput
from webtrawl.store.base import Change
from webtrawl.store.fanout import FanOut
from webtrawl.store.hook import CommandSink


def _gated(tmp_path: Path) -> str:
    """A hook that says it started, then waits for the test's gate before it reads its stdin."""
    (tmp_path / "started").mkdir()
    gate, out = tmp_path / "gate", tmp_path / "rows.jsonl"
    started = f'"{tmp_path}/started/$(basename "$TRAWL_CHANGE_URL")"'
    return f"touch {started}; while [ ! -e {gate} ]; do sleep 0.01; done; cat >> {out}"


def _changed(n: int, diff: str = "") -> list[PageOutput]:
    outs = []
    for i in range(n):
        url = f"https://shop.example/p{i}"
        out = page(url)
        out.changes = [Change(url, "T2", "T1", "changed", text_diff=diff or f"-old {i}\n+new {i}")]
        outs.append(out)
    return outs


def _started(tmp_path: Path) -> int:
    return sum(1 for _ in (tmp_path / "started").iterdir())


def test_a_burst_of_changes_past_the_running_limit_runs_every_row(tmp_path: Path) -> None:
    sink = CommandSink(_gated(tmp_path))
    fanout = FanOut([sink], retry_s=0.05)
    batch = _changed(20)  # more than the 16 runs allowed at once
    writer = threading.Thread(target=fanout.write, args=(batch,))
    writer.start()
    try:
        wait_until(lambda: _started(tmp_path) >= 16, 60, "16 runs started")
        assert writer.is_alive(), "the write waits for a free run; it does not skip rows"
    finally:
        (tmp_path / "gate").touch()
    writer.join()
    fanout.close()
    rows = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]
    assert sorted(row["url"] for row in rows) == sorted(out.record.url for out in batch)


def test_a_row_larger_than_a_pipe_does_not_wait_for_the_command_to_read_it(tmp_path: Path) -> None:
    sink = CommandSink(_gated(tmp_path))
    big = "\n".join(f"+line {i} of a long diff that a webhook will get" for i in range(4000))  # ~190 KB
    writer = threading.Thread(target=sink.write, args=(_changed(1, big),))
    writer.start()
    try:
        wait_until(lambda: _started(tmp_path) == 1, 60, "the run started")
        wait_until(lambda: not writer.is_alive(), 60, "the write to return while the command has not read")
    finally:
        (tmp_path / "gate").touch()
    writer.join()
    sink.close()
    assert json.loads((tmp_path / "rows.jsonl").read_text())["text_diff"] == big


def _flaky(tmp_path: Path, failures: int) -> str:
    """A hook whose first ``failures`` runs fail (a webhook down for a moment), then keeps the row."""
    count, out = tmp_path / "tries", tmp_path / "rows.jsonl"
    return f"echo x >> {count}; [ $(wc -l < {count}) -gt {failures} ] || exit 7; cat >> {out}"


def test_a_change_whose_command_fails_for_a_moment_is_delivered_by_a_later_try(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A failing --on-change command (a webhook down for a moment) lost that change's notification: it was logged and
    never run again. A failed run is run again after a delay, twice here, and the third delivers the row."""
    hooks = Hooks(_flaky(tmp_path, 2), "--on-change command", retry_delays=(0.0, 0.0, 0.0))
    with caplog.at_level(logging.WARNING, logger="webtrawl.hooks"):
        assert hooks.run({"url": "https://shop.example/p1", "change": "changed"})
        wait_until(lambda: hooks.reap() or (tmp_path / "rows.jsonl").exists(), 60, "the row delivered")
        hooks.close()
    assert json.loads((tmp_path / "rows.jsonl").read_text())["url"] == "https://shop.example/p1"
    assert (tmp_path / "tries").read_text().count("x") == 3
    assert caplog.text.count("exited with status 7; running it again") == 2 and "given up" not in caplog.text


def test_a_command_that_keeps_failing_is_given_up_with_one_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hooks = Hooks(_flaky(tmp_path, 100), "--on-change command", retry_delays=(0.0, 0.0))
    with caplog.at_level(logging.WARNING, logger="webtrawl.hooks"):
        hooks.run({"url": "https://shop.example/p1"})
        wait_until(lambda: hooks.reap() or "given up" in caplog.text, 60, "the command given up")
        hooks.close()
    assert (tmp_path / "tries").read_text().count("x") == 3
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert [r.getMessage() for r in errors] == ["--on-change command exited with status 7; given up after 3 tries"]


@pytest.mark.parametrize("reaped", [True, False], ids=["waiting-for-its-next-try", "failing-at-the-end"])
def test_a_command_still_failing_when_the_crawl_ends_is_tried_once_more_then_given_up_with_one_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, reaped: bool
) -> None:
    """At the end of a crawl a failed run waiting for its next try got its last one at once, but when that failed
    too nothing said so; a first run that failed during the end got no other try and no word either: the row's
    notification was lost with at most a WARNING in the log."""
    hooks = Hooks(_flaky(tmp_path, 100), "--on-change command", retry_delays=(60.0, 60.0))
    with caplog.at_level(logging.WARNING, logger="webtrawl.hooks"):
        hooks.run({"url": "https://shop.example/p1"})
        if reaped:
            wait_until(lambda: hooks.reap() or "running it again" in caplog.text, 60, "the first run failed")
        hooks.close()
    assert (tmp_path / "tries").read_text().count("x") == 2
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == ["--on-change command exited with status 7; given up after 2 tries"]


def test_a_command_still_running_when_the_crawl_ends_is_killed_once_and_not_started_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A run killed at the end of the crawl's wait had a try left, so it was started again past the deadline and
    killed at once: a second notification begun and cut off."""
    starts = tmp_path / "starts"
    hooks = Hooks(f"echo x >> {starts}; sleep 60", "--on-change command", retry_delays=(60.0,))
    with caplog.at_level(logging.WARNING, logger="webtrawl.hooks"):
        hooks.run({"url": "https://shop.example/p1"})
        wait_until(starts.exists, 60, "the command started")
        hooks.close(timeout=0.2)
    assert starts.read_text().count("x") == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == ["--on-change command still running at the end: killed; given up after 1 tries"]


def test_a_change_whose_command_is_given_up_is_named_in_the_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The ERROR line of a notification given up did not say which change it was for: of a round's many rows, the
    user could not tell which to deliver again from changes/."""
    sink = CommandSink(_flaky(tmp_path, 100))
    with caplog.at_level(logging.WARNING, logger="webtrawl.hooks"):
        sink.write(_changed(2)[1:])
        sink.close()  # the crawl ends: its failed run is tried once more at once, then given up
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    what = "--on-change command (changed https://shop.example/p1)"
    assert errors == [f"{what} exited with status 7; given up after 2 tries"]


def test_a_command_killed_at_the_end_takes_what_it_started_with_it(tmp_path: Path) -> None:
    """Killing a run killed its shell only: the command the shell was waiting for (a hung ``curl``) went on as an
    orphan after the crawl had ended, past the minute after which a run is killed."""
    pidfile = tmp_path / "pid"
    hooks = Hooks(f"sleep 600 & echo $! > {pidfile}.part; mv {pidfile}.part {pidfile}; wait", "--on-change command")
    hooks.run({"url": "https://shop.example/p1"})
    wait_until(pidfile.exists, 60, "the command started")
    hooks.close(timeout=0.2)
    pid = int(pidfile.read_text())
    wait_until(lambda: not running(pid), 60, f"the command's child {pid} killed")


def test_a_command_started_by_a_process_that_ignores_stop_signals_can_be_stopped_by_them(tmp_path: Path) -> None:
    """A parser ignores SIGTERM, SIGINT and SIGHUP (its supervisor decides when it stops), and its --on-change
    commands inherited that: 'kill PID' of a stuck one, or 'timeout 10 curl ...' inside one, did nothing."""
    pidfile = tmp_path / "pid"
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        hooks = Hooks(f"echo $$ > {pidfile}.tmp && mv {pidfile}.tmp {pidfile} && exec sleep 600", "--on-change")
        assert hooks.run({"n": 1})
    finally:
        signal.signal(signal.SIGTERM, previous)
    wait_until(pidfile.exists, 30, "the command to start")
    os.kill(int(pidfile.read_text()), signal.SIGTERM)
    proc = hooks._running[0].proc
    assert proc is not None
    try:
        assert proc.wait(60) == -signal.SIGTERM
    finally:
        hooks.close(0)
