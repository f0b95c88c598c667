"""A node run inside an application: it borrows SIGINT/SIGTERM only on the main thread and gives them back, and it
leaves the application's log handlers alone unless asked to set up its own."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from pathlib import Path
from types import FrameType

import pytest

from tests.node.crawlrun import records
from webtrawl.config import add_arguments, load
from webtrawl.node.embed import stop_signals
from webtrawl.node.supervisor import Node
from webtrawl_testweb import TestWeb


def _app_handler(signum: int, frame: FrameType | None) -> None:
    """Stands for the application's own handler."""


def _node_handler(signum: int, frame: FrameType | None) -> None:
    """Stands for the node's handler."""


def test_stop_signals_are_taken_on_the_main_thread_and_given_back() -> None:
    before = {sig: signal.signal(sig, _app_handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with stop_signals(_node_handler) as taken:
            assert taken
            assert signal.getsignal(signal.SIGINT) is _node_handler
            assert signal.getsignal(signal.SIGTERM) is _node_handler
        assert signal.getsignal(signal.SIGINT) is _app_handler
        assert signal.getsignal(signal.SIGTERM) is _app_handler
    finally:
        for sig, old in before.items():
            signal.signal(sig, old)


@pytest.mark.parametrize("found", [signal.SIG_DFL, signal.SIG_IGN, _app_handler], ids=["default", "nohup", "app"])
def test_a_hang_up_is_taken_only_where_it_would_kill_the_program(found: object) -> None:
    """A closed terminal (SIGHUP) drains the node instead of killing it; under nohup (ignored) or an application's
    own SIGHUP handler (a reload, say) the hang-up stays what it was."""
    before = signal.signal(signal.SIGHUP, found)  # type: ignore[arg-type]
    try:
        with stop_signals(_node_handler):
            during = signal.getsignal(signal.SIGHUP)
        after = signal.getsignal(signal.SIGHUP)
    finally:
        signal.signal(signal.SIGHUP, before)
    assert during is (_node_handler if found == signal.SIG_DFL else found)
    assert after == found


def test_stop_signals_are_not_touched_from_another_thread() -> None:
    """signal.signal raises off the main thread: a node started by an application's worker thread must not."""
    seen: list[object] = []

    def in_thread() -> None:
        with stop_signals(_node_handler) as taken:
            seen.extend([taken, signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)])

    before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert seen == [False, *before]


def test_a_node_in_an_application_keeps_its_log_and_signal_handlers(testweb: TestWeb, tmp_path: Path) -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    extra = ["--fetchers", "1", "--parsers", "1", "--delay", "0.05", "--max-pages", "5", "--progress", "off"]
    ns = parser.parse_args([*testweb.crawl_args(), *extra, "--out", str(tmp_path / "out")])
    cfg = load(vars(ns), seeds=testweb.seeds(1))
    root = logging.getLogger()
    app_handler = logging.StreamHandler()
    root.addHandler(app_handler)
    handlers = list(root.handlers)
    old_term = signal.signal(signal.SIGTERM, _app_handler)
    try:
        assert Node(cfg).run() == 0
        assert root.handlers == handlers
        assert signal.getsignal(signal.SIGTERM) is _app_handler
    finally:
        signal.signal(signal.SIGTERM, old_term)
        root.removeHandler(app_handler)
    assert len(records(tmp_path / "out")) >= 5  # and it did crawl
