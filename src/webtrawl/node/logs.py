"""Log output of a node: text or JSON lines (``--log-format json``, one object per line for log shippers), on
stderr and in files under ``<out>/logs/`` rotated by size (``--log-max-bytes``, ``--log-backups``).

Each process writes its own file (``trawl.log`` for the supervisor, ``fetcher-0.log``, ``parser-1.log``...):
rotation by several writers of one file would race, and a queue to the supervisor is exactly the shared lock a
killed process can leave held (see docs/architecture.md). Children get their logging set up before their work
starts (:func:`child_entry` wraps their target), so their warnings have the same format as the supervisor's.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import logging.handlers
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from webtrawl.errors import SinkFailed, StateError, WebtrawlError, no_room

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# What drains a node: Ctrl-C, 'systemctl stop' / Kubernetes (SIGTERM), a closed terminal or ssh session (SIGHUP).
# The supervisor takes them (node.embed), its children and their fork server ignore them.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_RESERVED = frozenset(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """``{"ts": "2026-11-23T18:00:01.123Z", "level": "WARNING", "logger": ..., "msg": ..., "process": ...}``."""

    def __init__(self, static: dict[str, str] | None = None) -> None:
        super().__init__()
        self.static = static or {}

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"
        doc: dict[str, Any] = {
            "ts": ts,
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
            "process": record.processName,
            "pid": record.process,
            **self.static,
        }
        for key, value in vars(record).items():  # extra={...} fields, e.g. the alert name
            if key not in _RESERVED and not key.startswith("_"):
                doc[key] = value if isinstance(value, str | int | float | bool) or value is None else str(value)
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False)


class QuietWhenFull(logging.Handler):
    """A log file's line that the disk has no room for is lost without a word. Logging's own report is a traceback
    on stderr for each such line, from every process: a wall of them buried the node's one line that says the disk
    is full (the disk alert, the outputs' pause), which is all there is to tell (stderr keeps the lines it shows)."""

    def handleError(self, record: logging.LogRecord) -> None:
        if not no_room(sys.exc_info()[1]):
            super().handleError(record)


class _RotatingFile(QuietWhenFull, logging.handlers.RotatingFileHandler):
    pass


@dataclass(frozen=True, slots=True)
class LogSetup:
    """Picklable: handed to child processes."""

    fmt: str = "text"  # "text" or "json"
    directory: Path | None = None  # <out>/logs; None: no files
    max_bytes: int = 10 * 1024 * 1024
    backups: int = 5
    level: int = logging.INFO
    node: str = ""
    encrypt_to: tuple[str, ...] = ()  # age public keys: the files are encrypted (node/agelog.py)

    def formatter(self) -> logging.Formatter:
        if self.fmt == "json":
            return JsonFormatter({"node": self.node} if self.node else None)
        return logging.Formatter(TEXT_FORMAT, datefmt="%H:%M:%S")

    def progress_line(self) -> Callable[[str], str] | None:
        """How the progress line is written in the log format (JSON: an INFO record of ``webtrawl.progress``)."""
        if self.fmt != "json":
            return None
        formatter = self.formatter()

        def as_record(line: str) -> str:
            record = logging.LogRecord("webtrawl.progress", logging.INFO, __file__, 0, line, None, None)
            return formatter.format(record)

        return as_record

    def file_handler(self, name: str) -> logging.Handler | None:
        if self.directory is None or self.max_bytes <= 0:
            return None
        self.directory.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler
        if self.encrypt_to:
            from webtrawl.formats.agekey import recipients
            from webtrawl.node.agelog import AgeLogHandler

            keys = recipients(self.encrypt_to)
            handler = AgeLogHandler(self.directory, name, keys, self.max_bytes, self.backups)
        else:
            handler = _RotatingFile(
                self.directory / f"{name}.log", maxBytes=self.max_bytes, backupCount=self.backups, encoding="utf-8"
            )
        # files always carry the full date: a crawl runs for days
        fmt = self.formatter() if self.fmt == "json" else logging.Formatter(TEXT_FORMAT)
        handler.setFormatter(fmt)
        return handler

    def apply(self, name: str, *, stderr_level: int | None = None) -> None:
        """Make this the process's logging: stderr (at ``stderr_level``) and the rotated file ``<name>.log``."""
        root = logging.getLogger()
        for old in list(root.handlers):
            root.removeHandler(old)
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(self.formatter())
        stream.setLevel(self.level if stderr_level is None else stderr_level)
        root.addHandler(stream)
        handler = self.file_handler(name)
        if handler is not None:
            root.addHandler(handler)
        root.setLevel(min(self.level, logging.INFO))


def child_entry(
    setup: LogSetup | None,
    name: str,
    target: str,
    args: Any,
    report: Connection | None = None,
    environ: dict[str, str] | None = None,
) -> None:
    """A child process's real entry point: its logging first (warnings to stderr as before), then its work.
    ``target`` is ``module:function``, imported here: the supervisor never loads a stage it does not run. An error
    that ends the child is sent, as one line, through ``report`` (with its kind, :func:`_kind`): the supervisor
    names it if it stops restarting.
    ``environ``: the starter's environment now (a fork server's is that of its own start, maybe a crawl ago).
    The child kills itself when the supervisor closes its end of ``report`` or dies (see ``node.children``)."""
    # The supervisor decides when a child stops: a signal meant for the node that reaches its whole process group
    # or cgroup (Ctrl-C at a terminal, 'systemctl stop', a hang-up the shell passes on) is the supervisor's to turn
    # into a drain.
    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, signal.SIG_IGN)
    if environ is not None and environ != os.environ:
        os.environ.clear()
        os.environ.update(environ)
    try:
        if setup is not None:
            setup.apply(name, stderr_level=logging.WARNING)
        if report is not None:
            threading.Thread(target=_end_with_supervisor, args=(report,), name="lifeline", daemon=True).start()
        module, _, function = target.partition(":")
        work: Callable[[Any], None] = getattr(importlib.import_module(module), function)
        try:
            work(args)
        finally:
            # A multiprocessing child ends with os._exit, which skips atexit and so logging's own shutdown: the
            # lines an encrypted log still gathered were lost and its file was left open (node/agelog.py).
            logging.shutdown()
    except Exception as exc:
        if report is not None:
            with contextlib.suppress(OSError):
                report.send((error_line(exc), _kind(exc)))
        if isinstance(exc, WebtrawlError):  # its message is for users, and the node logs it: not a traceback too
            raise SystemExit(1) from None
        raise


def _end_with_supervisor(report: Connection) -> None:
    """Block until the reading end of ``report`` closes (poll reports POLLERR on the sending end), then end as a
    kill -9 would: the supervisor that would drain, restart or stop this child is gone or has given it up, and what a
    killed child leaves is what a restart recovers."""
    watch = select.poll()
    watch.register(report.fileno(), 0)  # no event asked: only POLLERR / POLLHUP, which poll always reports
    events = watch.poll()
    if any(event & (select.POLLERR | select.POLLHUP) for _fd, event in events):  # not POLLNVAL: our own close
        logging.getLogger("webtrawl.node").error("the node's supervisor is gone or gave this child up: it ends")
        os.kill(os.getpid(), signal.SIGKILL)


def _kind(exc: BaseException) -> str:
    """What the supervisor makes of a child's end: ``state`` (the crawl's state away: a restart may outlive it),
    ``final`` (a restart would fail the same way: the node stops at once) or ``""`` (restarted, up to a point)."""
    if isinstance(exc, StateError):
        return "state"
    return "final" if isinstance(exc, SinkFailed) else ""


def error_line(exc: BaseException) -> str:
    """``Type: message`` on one line (our own errors, whose message is for users, without their type)."""
    text = " ".join(str(exc).split())
    if isinstance(exc, WebtrawlError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
