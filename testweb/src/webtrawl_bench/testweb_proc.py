"""The test web in its own process, so that its CPU is never counted as the crawler's.

``python -m webtrawl_testweb ... --info-json FILE`` writes its ports, CA and crawler flags once it listens; this
module starts it, waits for that file and stops it with SIGTERM (the server closes its log and exits).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

_START_TIMEOUT_S = 60.0


WEBS = ("realistic", "synthetic")
DEFAULT_HOSTS = {"realistic": 40_000, "synthetic": 6_000}


@dataclass(frozen=True, slots=True)
class WebSpec:
    """The shape of the test web a benchmark crawls: ``realistic`` (the default) or ``synthetic``.

    ``corpus_fraction``, ``min_pages`` and ``max_pages`` shape the synthetic web only; ``seeds`` the realistic one.
    """

    web: str = "realistic"
    hosts: int = DEFAULT_HOSTS["realistic"]
    seeds: int = 10
    corpus_fraction: float = 1.0
    min_pages: int = 10  # pages per host: 25 on average, so robots.txt is ~4% of the fetches once all hosts are
    max_pages: int = 40  # known, and the test web holds more than a run can fetch (6,000 hosts: ~150k pages)
    seed: int = 0
    corpus_dir: Path | None = None
    options: tuple[str, ...] = ()  # realistic: ``name=value`` settings of RealisticOptions (--realistic-option)
    chaos: bool = False  # synthetic only: add the hostile hosts (*.chaos.test), their hub among the seeds


class TestWebProcess:
    """``with TestWebProcess(spec, workdir) as web:`` -> ``web.info`` (ports, CA, seeds), ``web.pid``."""

    __test__ = False  # not a pytest test class

    def __init__(self, spec: WebSpec, workdir: Path) -> None:
        self.spec = spec
        self.workdir = workdir
        self.info: dict[str, Any] = {}
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError("test web not started")
        return self._proc.pid

    @property
    def ports(self) -> list[int]:
        return [int(self.info["http_port"]), int(self.info["https_port"])]

    @property
    def log_path(self) -> Path:
        """The test web's access log (JSON lines, see :mod:`webtrawl_testweb.accesslog`)."""
        return self.workdir / "access.jsonl"

    @property
    def crawl_args(self) -> list[str]:
        return [str(a) for a in self.info["crawl_args"]]

    def start(self) -> Self:
        self.workdir.mkdir(parents=True, exist_ok=True)
        info_path = self.workdir / "testweb.json"
        info_path.unlink(missing_ok=True)
        cmd = [
            sys.executable,
            *("-m", "webtrawl_testweb"),
            *("--web", self.spec.web),
            *("--seeds", str(self.spec.seeds)),
            *("--hosts", str(self.spec.hosts)),
            *("--seed", str(self.spec.seed)),
            *("--corpus-fraction", repr(self.spec.corpus_fraction)),
            *("--min-pages", str(self.spec.min_pages)),
            *("--max-pages", str(self.spec.max_pages)),
            *("--cert-dir", str(self.workdir / "certs")),
            *("--info-json", str(info_path)),
            *("--log", str(self.log_path)),
        ]
        for option in self.spec.options:
            cmd += ["--realistic-option", option]
        if self.spec.corpus_dir is not None:
            cmd += ["--corpus-dir", str(self.spec.corpus_dir)]
        if self.spec.chaos:
            cmd.append("--chaos")
        log = (self.workdir / "testweb.log").open("wb")
        self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not info_path.is_file() or not info_path.read_text().strip().endswith("}"):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                tail = (self.workdir / "testweb.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the test web did not start: {tail}")
            time.sleep(0.05)
        self.info = json.loads(info_path.read_text())
        return self

    def stats(self) -> dict[str, int]:
        """What the realistic web has served so far, by kind (``page``, ``robots-big``, ``fault-slow``, ...);
        empty for the synthetic web."""
        if self.info.get("web") != "realistic":
            return {}
        conn = http.client.HTTPConnection("127.0.0.1", int(self.info["http_port"]), timeout=10)
        try:
            conn.request("GET", "/_stats", headers={"Host": "127.0.0.1"})
            data: dict[str, int] = json.loads(conn.getresponse().read())
            return data
        finally:
            conn.close()

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
