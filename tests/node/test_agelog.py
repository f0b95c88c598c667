"""Encrypted log files (``--encrypt-to``): each one an age file Debian's ``age -d`` reads; a warning is on disk at
once, a process killed with its file open leaves its written lines readable, rotation keeps ``--log-backups``."""

from __future__ import annotations

import logging
import multiprocessing
from pathlib import Path

import pytest

from tests.store.agekit import AgeKey, age_key
from webtrawl.formats.agekey import recipients
from webtrawl.node.agelog import AgeLogHandler
from webtrawl.node.children import prestart
from webtrawl.node.logs import LogSetup, child_entry

pytest.importorskip("pyrage", reason="the encrypt extra encrypts outputs")


def _logger(handler: logging.Handler) -> logging.Logger:
    log = logging.getLogger(f"test.agelog.{id(handler)}")
    log.propagate = False
    log.setLevel(logging.INFO)
    log.addHandler(handler)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    return log


def _plain(key: AgeKey, directory: Path) -> str:
    return "".join(key.decrypt(path).decode() for path in sorted(directory.glob("fetcher-0-*.log.age")))


def test_warnings_are_written_at_once_and_a_kill_keeps_what_was_written(tmp_path: Path) -> None:
    key = age_key(tmp_path / "age")
    logs = tmp_path / "logs"
    handler = AgeLogHandler(logs, "fetcher-0", recipients([key.recipient]), 10 << 20, 5)
    log = _logger(handler)
    log.info("fetched http://a.test/1")
    assert not list(logs.iterdir()), "an INFO line waits for more"
    log.warning("robots.txt of http://a.test/ failed")
    journal = logs / "fetcher-0-00000.log.age.open"
    assert list(logs.iterdir()) == [journal] and b"a.test" not in journal.read_bytes()
    log.info("fetched http://a.test/2")
    log.removeHandler(handler)  # killed: the handler is never closed, its waiting INFO line is lost
    after = AgeLogHandler(logs, "fetcher-0", recipients([key.recipient]), 10 << 20, 5)
    _logger(after).error("restarted")
    after.close()
    assert sorted(p.name for p in logs.iterdir()) == ["fetcher-0-00000-00000.log.age", "fetcher-0-00001.log.age"]
    lines = ["INFO fetched http://a.test/1", "WARNING robots.txt of http://a.test/ failed", "ERROR restarted"]
    assert _plain(key, logs).splitlines() == lines


def test_rotation_keeps_the_backups_and_the_current_file(tmp_path: Path) -> None:
    key = age_key(tmp_path / "age")
    handler = AgeLogHandler(tmp_path / "logs", "fetcher-0", recipients([key.recipient]), 100, 2)
    log = _logger(handler)
    for n in range(10):
        log.warning("line %d %s", n, "x" * 60)
    handler.close()
    files = sorted((tmp_path / "logs").iterdir())
    assert [p.name for p in files] == [f"fetcher-0-0000{n}.log.age" for n in (2, 3, 4)]  # two lines each
    assert _plain(key, tmp_path / "logs").splitlines() == [f"WARNING line {n} {'x' * 60}" for n in range(4, 10)]


def test_the_supervisor_seals_what_processes_that_do_not_run_again_left(tmp_path: Path) -> None:
    key = age_key(tmp_path / "age")
    logs = tmp_path / "logs"
    gone = AgeLogHandler(logs, "parser-3", recipients([key.recipient]), 10 << 20, 5)
    _logger(gone).warning("parsed http://a.test/1")  # then killed; a resume runs fewer parsers
    supervisor = AgeLogHandler(logs, "trawl", recipients([key.recipient]), 10 << 20, 5)
    supervisor.close()
    assert [p.name for p in logs.iterdir()] == ["parser-3-00000-00000.log.age"]
    assert key.decrypt(logs / "parser-3-00000-00000.log.age") == b"WARNING parsed http://a.test/1\n"


def _log_one_line(args: object) -> None:
    logging.getLogger("webtrawl.fetch").info("fetched http://a.test/1")  # an INFO line: it waits for more


def test_a_child_that_ends_writes_its_waiting_lines_and_seals_its_file(tmp_path: Path) -> None:
    """A node's child ends by os._exit (multiprocessing's fork server), which skips logging's shutdown: its gathered
    INFO lines were lost and its encrypted log, once it had written one, stayed an open journal after the crawl ended.
    Started as the node starts its children (a plain fork would carry the other tests' handlers)."""
    key = age_key(tmp_path / "age")
    logs = tmp_path / "logs"
    setup = LogSetup(directory=logs, encrypt_to=(key.recipient,))
    target = f"{__name__}:{_log_one_line.__name__}"
    # the node's fork server (its stages preloaded), started as the node starts it: one started here by a bare
    # forkserver Process had none, and the test process's later children (test_children.py) found them not loaded
    prestart()
    child = multiprocessing.get_context("forkserver").Process(
        target=child_entry, args=(setup, "fetcher-0", target, None)
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert [p.name for p in logs.iterdir()] == ["fetcher-0-00000.log.age"]
    assert key.decrypt(logs / "fetcher-0-00000.log.age").decode().endswith("fetched http://a.test/1\n")
