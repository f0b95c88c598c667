"""Shell hooks (``--alert-cmd``, ``--on-change``): a command run in the background with one JSON object on stdin.

Each run goes through the shell with extra environment variables, in its own session, its output discarded, the
JSON in a temporary file as its stdin; a hook is never waited for on the crawl's path. At most ``max_running`` run
at once (more are skipped with a log line, unless the caller checks :meth:`Hooks.full` first: a hook that hangs must
not pile up processes), and one still running after a minute is killed. A run that fails (a non-zero status, or
killed) is run again after :data:`RETRY_DELAYS_S` (a webhook down for a moment loses no notification); the last
failure is one ERROR line saying it is given up.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_KILLED = "still running at the end: killed"
log = logging.getLogger("webtrawl.hooks")

_TIMEOUT_S = 60.0
RETRY_DELAYS_S = (2.0, 10.0, 30.0)  # a failed run is run again after each of these, then given up


@dataclass
class _Run:
    doc: dict[str, Any]
    env: dict[str, str] | None
    about: str = ""  # what the run is for, in its log lines (the change row's kind and URL, the alert)
    tries: int = 0  # runs started so far
    started: float = 0.0  # of the current run (time.monotonic())
    proc: subprocess.Popen[bytes] | None = None
    due: float = 0.0  # when a failed run is run again


# The signals a terminal, kill or a timeout wrapper sends: a crawler process ignores or blocks some of them (its
# supervisor decides when it stops), and a command inherits ignored and blocked signals through exec: 'kill PID' or
# 'timeout 10 curl ...' in a hook then did nothing.
_COMMAND_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def _default_signals() -> None:
    """In the command's process, before exec: the signals as any shell command expects them."""
    for sig in _COMMAND_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Kill the run's whole process group (its session's, started with it): the shell and what it started (a
    ``curl`` the shell waits for would otherwise go on, an orphan, after the shell is killed)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class Hooks:
    def __init__(
        self, cmd: str, what: str, max_running: int = 8, retry_delays: Sequence[float] = RETRY_DELAYS_S
    ) -> None:
        self.cmd, self.what, self.max_running = cmd, what, max_running
        self.retry_delays = tuple(retry_delays)
        self._running: list[_Run] = []
        self._again: list[_Run] = []  # failed runs waiting for their next try

    def full(self) -> bool:
        """Whether ``max_running`` runs are still going (finished ones are reaped first)."""
        self.reap()
        return len(self._running) >= self.max_running

    def run(self, doc: dict[str, Any], env: dict[str, str] | None = None, about: str = "") -> bool:
        """Start the command with ``doc`` as JSON on stdin; False if it was skipped or could not start. ``about``
        names what it is for in the log lines (a failure given up says which notification was lost)."""
        run = _Run(doc, env, about)
        if self.full():
            log.error("%s not run: %d earlier runs are still going", self._name(run), len(self._running))
            return False
        return self._start(run)

    def _name(self, run: _Run) -> str:
        return f"{self.what} ({run.about})" if run.about else self.what

    def _start(self, run: _Run) -> bool:
        doc, env = run.doc, run.env
        try:
            # stdin is a file, not a pipe: a document larger than a pipe holds (64 KiB) cannot block the caller
            # until the command reads it, nor fail because it never does
            with tempfile.TemporaryFile() as stdin:
                stdin.write(json.dumps(doc).encode() + b"\n")
                stdin.seek(0)
                proc = subprocess.Popen(
                    self.cmd,
                    shell=True,
                    stdin=stdin,
                    stdout=subprocess.DEVNULL,
                    env={**os.environ, **(env or {})},
                    start_new_session=True,
                    preexec_fn=_default_signals,  # signal calls only: no lock another thread could hold
                )
        except OSError as exc:
            log.error("%s could not start: %s", self._name(run), exc)
            return False
        run.proc, run.started, run.tries = proc, time.monotonic(), run.tries + 1
        self._running.append(run)
        return True

    def reap(self) -> None:
        running = []
        now = time.monotonic()
        for run in self._running:
            assert run.proc is not None
            code = run.proc.poll()
            if code is None and now - run.started <= _TIMEOUT_S:
                running.append(run)
                continue
            if code is None:
                _kill(run.proc)
                self._failed(run, f"still running after {_TIMEOUT_S:.0f}s: killed", now)
            elif code != 0:
                self._failed(run, f"exited with status {code}", now)
        self._running = running
        due = [run for run in self._again if run.due <= now]
        for run in due:
            if len(self._running) >= self.max_running:
                break
            self._again.remove(run)
            self._start(run)

    def _failed(self, run: _Run, why: str, now: float) -> None:
        if run.tries > len(self.retry_delays):
            log.error("%s %s; given up after %d tries", self._name(run), why, run.tries)
            return
        delay = self.retry_delays[run.tries - 1]
        log.warning("%s %s; running it again in %gs (try %d)", self._name(run), why, delay, run.tries + 1)
        run.due = now + delay
        self._again.append(run)

    def close(self, timeout: float = 10.0) -> None:
        """Give running hooks a moment to finish (the last event of a crawl should still be delivered). A failed run
        waiting for another try, or one that fails now with tries left, gets one more at once; a run that fails
        then is given up (one ERROR line)."""
        deadline = time.monotonic() + timeout
        last = self._again
        for run, why in self._wait(deadline):
            if run.tries > len(self.retry_delays) or why == _KILLED:  # one killed at the end would be killed again
                log.error("%s %s; given up after %d tries", self._name(run), why, run.tries)
            else:
                last.append(run)
        self._again = []
        for run in last:
            if time.monotonic() < deadline:
                self._start(run)
            else:  # started now, it would be killed at once: a half-sent notification
                why = "not run again: the crawl ended first"
                log.error("%s %s; given up after %d tries", self._name(run), why, run.tries)
        for run, why in self._wait(deadline):
            log.error("%s %s; given up after %d tries", self._name(run), why, run.tries)

    def _wait(self, deadline: float) -> list[tuple[_Run, str]]:
        """Wait for the running hooks until ``deadline`` (then kill them): those that failed, and why."""
        failed = []
        for run in self._running:
            assert run.proc is not None
            try:
                code = run.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _kill(run.proc)
                failed.append((run, _KILLED))
                continue
            if code != 0:
                failed.append((run, f"exited with status {code}"))
        self._running = []
        return failed
