"""Child processes of a node: start, watch, restart, stop.

Children are forked by multiprocessing's fork server, started (:func:`prestart`) as soon as a crawl is about to
run: it imports the stages' modules once while the supervisor starts Redis, and every child (restarts too) is a
fork of it, ready at once, where ``spawn`` had each child import its whole stack again. The server is a fresh
interpreter, not the supervisor: no inherited locks, threads, sockets or event loops, as with ``spawn``; a child
still imports the script that started the crawl and gets the environment of its start (``logs.child_entry``).

A child outlives neither its supervisor nor the supervisor's belief that it is alive. It holds the sending end of a
pipe whose only reading end the supervisor keeps (the child reports its last error through it), and kills itself
when that end closes (``logs.child_entry``): when the supervisor dies, even by a kill -9 of its pid alone, and when
the supervisor takes the child for dead and starts another in its place (its fork server, through which it learns of
exits, was killed). What is left is a node, or a child, killed whole, which a restart recovers, never two processes
leasing and writing the same files.

A child that dies while the node is running is reported and started again with the same index; the new fetcher
takes back the leases of its previous life by its owner id. One that keeps dying with an error soon after its start
(a setting, a file or a library it cannot use) would be restarted forever: after :data:`START_FAILURES` such deaths
in a row the node stops with the child's last error instead.
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from webtrawl.errors import ChildFailed
from webtrawl.node.allocator import children_malloc, preloaded
from webtrawl.node.logs import STOP_SIGNALS, LogSetup, child_entry

log = logging.getLogger("webtrawl.node")

CONTEXT = multiprocessing.get_context("forkserver")
# What the fork server imports before it forks anyone: its own signal setup, then the stages a node's children run.
# A module that fails to import there (an extra not installed) is imported in the child instead, and fails there
# with its own error.
_STAGES = ["webtrawl.node._forkserver", "webtrawl.node.logs", "webtrawl.fetch.worker", "webtrawl.parse.worker"]
START_FAILURES = 3  # deaths in a row, each with an error within START_WINDOW_S of its start, that stop the node
START_WINDOW_S = 30.0  # a child that lived longer got to work: its death is a crash to restart from, not a loop
_PRESTART = threading.Lock()  # two crawls of one program (threads, arun()s) start the one fork server in turn


def prestart() -> None:
    """Start the fork server now (it imports the stages while the caller goes on); idempotent. Without it, the
    first child's start starts it.

    multiprocessing's resource tracker (which the node's shared events and counters register with) and the fork
    server start with the stop signals blocked, a mask they keep across their exec: the tracker ignores only SIGINT
    and SIGTERM, and a hang-up the shell passes on to the node's process group would kill it mid-drain (it comes
    back empty, and every release of a shared object is then a traceback)."""
    with _PRESTART:
        _prestart()


def _prestart() -> None:
    multiprocessing.forkserver.set_forkserver_preload(_STAGES)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        multiprocessing.resource_tracker.ensure_running()
        # jemalloc (allocator.py), in the environment only when the server is to start: another thread starting
        # a program meanwhile (an embedding program's) would inherit it
        with preloaded("" if _server_alive() else children_malloc()):
            multiprocessing.forkserver.ensure_running()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _server_alive() -> bool:
    """Whether the fork server runs: multiprocessing keeps its pid (private), and a dead one stays a zombie until
    ``ensure_running`` reaps it and starts another."""
    pid = getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None)
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@dataclass
class Child:
    kind: str  # "fetcher" or "parser"
    index: int
    target: str  # "module:function", imported in the child (logs.child_entry)
    args: Any
    process: multiprocessing.context.ForkServerProcess | None = None
    restarts: int = 0
    log_setup: LogSetup | None = None  # the child sets up its logging (format, rotated file) before its work
    start_failures: int = 0  # deaths in a row with an error soon after the start
    last_error: str = ""
    final: bool = False  # its last error is one a restart would repeat (logs._kind): the node stops
    _started: float = 0.0
    _errors: Connection | None = None  # the child sends the error that ends it (logs.child_entry)

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.index}"

    def start(self) -> None:
        self.close()  # an earlier life that is somehow still running ends now, before this one starts
        prestart()  # the stages are what the server imports, whoever starts the first child
        receive, send = CONTEXT.Pipe(duplex=False)
        args = (self.log_setup, self.name, self.target, self.args, send, dict(os.environ))
        self.process = CONTEXT.Process(target=child_entry, args=args, name=f"trawl-{self.name}", daemon=False)
        self.process.start()
        send.close()  # the child holds the only sending end: at its death the pipe reads EOF
        self._errors, self._started = receive, time.monotonic()

    def close(self) -> None:
        """Close this node's end of the child's pipe: a child still running kills itself."""
        if self._errors is not None:
            self._errors.close()
            self._errors = None

    def died(self) -> str:
        """How the dead child ended, for the log; counts a death at start (an error, soon after it started, that is
        not the crawl state being away: a Redis restart is outlived by restarting)."""
        assert self.process is not None
        code = self.process.exitcode
        error, kind = "", ""
        if self._errors is not None:
            with contextlib.suppress(EOFError, OSError):
                if self._errors.poll():
                    error, kind = self._errors.recv()
        self.final = kind == "final"
        if code is not None and code > 0 and kind != "state" and time.monotonic() - self._started < START_WINDOW_S:
            self.start_failures += 1
        else:
            self.start_failures = 0  # killed by a signal (kill -9, OOM), Redis away, or after working a while
        self.last_error = error or self.last_error
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        return f"{how}: {error}" if error else how

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def alive(self) -> bool:
        return self.process is not None and self.process.is_alive()


@dataclass
class Children:
    """All children of a node; their pids are kept in ``pid_file`` (JSON name -> pid) for operators and tests."""

    pid_file: Path | None = None
    members: list[Child] = field(default_factory=list)
    starting: bool = False  # a child is being started: a quit at once waits for it (quit_asked)
    quit_asked: bool = False

    def add(self, child: Child) -> None:
        self.members.append(child)
        self._start(child)
        self._write_pids()

    def quit_at_once(self) -> None:
        """A second Ctrl-C: KeyboardInterrupt now, or once the child being started is whole."""
        self.quit_asked = True
        if not self.starting:
            raise KeyboardInterrupt

    def _start(self, child: Child) -> None:
        """Start ``child`` whole: a second Ctrl-C meanwhile raises once it is started (cut short, the fork server's
        new process found the node's shared events gone and printed a traceback)."""
        self.starting = True
        try:
            child.start()
        finally:
            self.starting = False
        if self.quit_asked:
            raise KeyboardInterrupt

    def close(self) -> None:
        """The node is done: a child still running ends (a program that runs crawls one after another keeps no
        children and no fds)."""
        for child in self.members:
            child.close()

    def _write_pids(self) -> None:
        if self.pid_file is None:
            return
        tmp = self.pid_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({c.name: c.pid for c in self.members}, sort_keys=True))
        tmp.replace(self.pid_file)

    def of(self, kind: str) -> list[Child]:
        return [c for c in self.members if c.kind == kind]

    def pids(self, kind: str) -> list[int]:
        return [c.pid for c in self.of(kind) if c.pid is not None and c.alive()]

    def restart_dead(self) -> list[str]:
        """Restart children that died; return one message per restart for the log. Raises :class:`ChildFailed`
        instead when a child died at start :data:`START_FAILURES` times in a row, or of an error a restart would
        repeat (a sink's failure)."""
        messages = []
        for child in self.members:
            if child.process is None or child.alive():
                continue
            how = child.died()
            if child.final:
                raise ChildFailed(child.last_error)
            if child.start_failures >= START_FAILURES:
                raise ChildFailed(
                    f"{child.name} died at start {child.start_failures} times in a row: {child.last_error or how}"
                )
            child.restarts += 1
            messages.append(f"{child.name} (pid {child.pid}) died ({how}); restarting it (restart #{child.restarts})")
            self._start(child)
        if messages:
            self._write_pids()
        return messages

    def wait(self, kind: str, timeout: float) -> bool:
        """Wait for all children of a kind to exit; True if they did within ``timeout``."""
        deadline = time.monotonic() + timeout
        for child in self.of(kind):
            if child.process is not None:
                child.process.join(max(0.0, deadline - time.monotonic()))
        return not any(c.alive() for c in self.of(kind))

    def kill(self, kind: str | None = None) -> None:
        for child in self.members:
            if (kind is None or child.kind == kind) and child.alive() and child.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, signal.SIGKILL)
        for child in self.members:
            if child.process is not None and (kind is None or child.kind == kind):
                child.process.join(5)
