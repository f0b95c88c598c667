"""Shell hooks (``--alert-cmd``, ``--on-change``): a command run in the background with one JSON object on stdin.

Each run goes through the shell with extra environment variables, in its own session, its output discarded, the
JSON in a temporary file as its stdin; a hook is never waited for on the crawl's path. At most ``max_running`` run
at once (more are skipped with a log line, unless the caller checks :meth:`Hooks.full` first: a hook that hangs must
not pile up processes), and one still running after a minute is killed.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import tempfile
import time
from typing import Any

log = logging.getLogger("webtrawl.hooks")

_TIMEOUT_S = 60.0


class Hooks:
    def __init__(self, cmd: str, what: str, max_running: int = 8) -> None:
        self.cmd, self.what, self.max_running = cmd, what, max_running
        self._running: list[tuple[float, subprocess.Popen[bytes]]] = []

    def full(self) -> bool:
        """Whether ``max_running`` runs are still going (finished ones are reaped first)."""
        self.reap()
        return len(self._running) >= self.max_running

    def run(self, doc: dict[str, Any], env: dict[str, str] | None = None) -> bool:
        """Start the command with ``doc`` as JSON on stdin; False if it was skipped or could not start."""
        if self.full():
            log.error("%s not run: %d earlier runs are still going", self.what, len(self._running))
            return False
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
                )
        except OSError as exc:
            log.error("%s could not start: %s", self.what, exc)
            return False
        self._running.append((time.monotonic(), proc))
        return True

    def reap(self) -> None:
        running = []
        for started, proc in self._running:
            code = proc.poll()
            if code is None:
                if time.monotonic() - started > _TIMEOUT_S:
                    log.error("%s still running after %.0fs: killed", self.what, _TIMEOUT_S)
                    proc.kill()
                    proc.wait()
                else:
                    running.append((started, proc))
            elif code != 0:
                log.error("%s exited with status %d", self.what, code)
        self._running = running

    def close(self, timeout: float = 10.0) -> None:
        """Give running hooks a moment to finish (the last event of a crawl should still be delivered)."""
        deadline = time.monotonic() + timeout
        for _, proc in self._running:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._running = []
