"""One measured crawl: a private Redis (optionally preloaded), ``trawl crawl`` as its own process, and the
numbers of a fixed window after a warm-up that starts with the first request done.

The node is started exactly as a user would start it (``python -m webtrawl crawl ...``) except ``--redis``: the
benchmark owns the redis-server (the same embedded server the node would start) so that it can preload the
frontier before the crawl and read Redis's counters while it runs. Only the window is measured, so start-up
(imports, robots.txt of the first hosts) and the drain at the end do not blur the steady state.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webtrawl.config import load
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl_bench.preload import preload
from webtrawl_bench.probe import median_us, probe_us
from webtrawl_bench.procstat import NODE_KINDS, ProcessWatch, count_by_kind, cpu_by_kind
from webtrawl_bench.redisstat import RedisSample, bloom_bytes, sample, used_memory
from webtrawl_bench.spec import CrawlSpec, follow_args
from webtrawl_bench.testweb_proc import TestWebProcess
from webtrawl_bench.webmix import WebMix, connections_opened, measure
from webtrawl_testweb.accesslog import load as load_log

_POLL_S = 0.5
_STOP_GRACE_S = 120.0
_START_TIMEOUT_S = 300.0


@dataclass
class RunResult:
    seconds: float
    pages: int  # HTTP responses fetched (any status; robots.txt not counted) in the window
    cpu: dict[str, float]  # CPU seconds per process kind in the window
    processes: dict[str, int]
    peak_rss: dict[str, int]
    redis_reads: int
    redis_commands: int
    redis_scripts: int
    queued: int
    used_memory: int  # Redis data bytes at the end of the window (less the empty server's)
    bloom_bytes: int
    counters: dict[str, int] = field(default_factory=dict)  # deltas in the window
    preloaded: int = 0
    preload_seconds: float = 0.0
    new_connections: int = 0  # connections to the test web whose first request started in the window (its log)
    web_counts: dict[str, int] = field(default_factory=dict)  # what the (realistic) test web served in the window
    web_mix: WebMix | None = None  # the same from its access log, per 60 s, in the terms of the real web's figures
    window_ms: tuple[float, float, float] = (0.0, 0.0, 0.0)  # wall clock (ms): the node's start, the window's bounds
    warc_bytes: int = 0  # .warc.gz bytes written in the window (the counter ``warc`` counts its record pairs)
    probe_us: float = float("nan")  # the machine's speed in the window (probe.py): median us of the bench's probe

    @property
    def robots_requests(self) -> int:
        """robots.txt requests in the window: as the test web counted them, else the crawler's own counter."""
        if self.web_counts:
            return sum(v for k, v in self.web_counts.items() if k.startswith("robots"))
        return self.counters.get("robots-fetched", 0)

    @property
    def faults(self) -> dict[str, int]:
        """Faulty answers the test web gave in the window, by fault."""
        return {k.removeprefix("fault-"): v for k, v in sorted(self.web_counts.items()) if k.startswith("fault-")}

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.seconds if self.seconds else 0.0

    def node_cpu(self) -> float:
        return sum(v for k, v in self.cpu.items() if k != "testweb")

    def ms_per_page(self, kind: str | None = None) -> float:
        cpu = self.node_cpu() if kind is None else self.cpu.get(kind, 0.0)
        return 1000.0 * cpu / self.pages if self.pages else float("nan")

    @property
    def warc_kb_per_pair(self) -> float:
        """KB (1000 bytes) on disk of one page's WARC records (request and response, and what a rendered page adds)."""
        pairs = self.counters.get("warc", 0)
        return self.warc_bytes / 1000 / pairs if pairs else float("nan")

    def bytes_per_url(self, with_bloom: bool = False) -> float:
        data = self.used_memory if with_bloom else self.used_memory - self.bloom_bytes
        return data / self.queued if self.queued else float("nan")

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "pages": self.pages,
            "pages_per_s": self.pages_per_s,
            "node_ms_per_page": self.ms_per_page(),
            "ms_per_page": {k: self.ms_per_page(k) for k in self.cpu},
            "cpu_s": self.cpu,
            "processes": self.processes,
            "peak_rss": self.peak_rss,
            "redis_round_trips_per_page": self.redis_reads / self.pages if self.pages else None,
            "redis_commands_per_page": self.redis_commands / self.pages if self.pages else None,
            "redis_scripts_per_page": self.redis_scripts / self.pages if self.pages else None,
            "queued": self.queued,
            "redis_bytes_per_url": self.bytes_per_url(),
            "redis_bytes_per_url_with_bloom": self.bytes_per_url(with_bloom=True),
            "bloom_bytes": self.bloom_bytes,
            "counters": self.counters,
            "new_connections": self.new_connections,
            "new_connections_per_fetch": self.new_connections / self.pages if self.pages else None,
            "robots_requests": self.robots_requests,
            "robots_requests_per_page": self.robots_requests / self.pages if self.pages else None,
            "web_counts": self.web_counts,
            "web_mix": self.web_mix.as_dict() if self.web_mix else None,
            "window_ms": self.window_ms,
            "warc_bytes": self.warc_bytes,
            "warc_kb_per_pair": self.warc_kb_per_pair if self.counters.get("warc") else None,
            "preloaded": self.preloaded,
            "preload_seconds": self.preload_seconds,
            "probe_us": self.probe_us,
        }


def crawl_flags(spec: CrawlSpec) -> dict[str, str]:
    """The option values (CrawlConfig names) the node gets, besides the test web's own flags."""
    flags = {
        "delay": repr(spec.delay),
        "fetchers": str(spec.fetchers),
        "parsers": str(spec.parsers),
        "concurrency": str(spec.concurrency),
        "expected_urls": str(spec.expected_urls),
        "progress": "log",
    }
    return flags


def _argv(flags: dict[str, str]) -> list[str]:
    out: list[str] = []
    for name, value in flags.items():
        out += ["--" + name.replace("_", "-"), value]
    return out


class NodeProcess:
    """``trawl crawl`` as a child process with its log in a file."""

    def __init__(self, argv: list[str], log_path: Path) -> None:
        with log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "webtrawl", "crawl", *argv], stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # graceful: fetchers hand over their pages, parsers finish
            try:
                self.proc.wait(_STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_once(web: TestWebProcess, spec: CrawlSpec, workdir: Path, log: Any = None) -> RunResult:
    """One crawl of ``spec.warmup + spec.window`` seconds against ``web``; the numbers of the window."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "out"
    flags = crawl_flags(spec)
    argv = [*web.info["seeds"], "--out", str(out), *web.crawl_args, *_argv(flags)]
    if not spec.warc:
        argv.append("--no-warc")
    argv += follow_args(spec.follow_all)
    argv += list(spec.extra)
    budget = _START_TIMEOUT_S + spec.warmup + spec.window + 30.0
    argv += ["--max-time", repr(budget)]  # a safety net: the window ends first and the node is stopped
    cfg = load({"expected_urls": flags["expected_urls"], "out": str(out)})
    with EmbeddedRedis(workdir / "redis") as server:
        client = connect_sync(server.url)
        empty = used_memory(client)
        frontier = RedisFrontier.open(client, FrontierSettings.from_config(cfg))
        preloaded, preload_s = (0, 0.0)
        if spec.preload:
            preloaded, preload_s = preload(client, frontier, spec.preload)
            if log:
                log(f"preloaded {preloaded:,} URLs in {preload_s:.0f}s")
        run_start_ms = time.time() * 1000.0
        node = NodeProcess([*argv, "--redis", server.url], workdir / "node.log")
        try:
            watch = ProcessWatch(node.proc.pid, out, server.pid, [web.pid])
            _wait_started(node, watch, frontier)
            _wait(node, watch, spec.warmup)
            cpu0, red0, t0, web0 = watch.sample(), sample(client, frontier), time.monotonic(), web.stats()
            w0, warc0 = time.time() * 1000.0, _warc_bytes(out)
            probes: list[float] = []
            _wait(node, watch, spec.window, probes)
            cpu1, red1, t1, web1 = watch.sample(), sample(client, frontier), time.monotonic(), web.stats()
            w1, warc1 = time.time() * 1000.0, _warc_bytes(out)
            watch.poll()
            mem, bloom = used_memory(client) - empty, bloom_bytes(client, frontier)
        finally:
            node.stop()
        client.close()
    result = _result(t1 - t0, cpu0, cpu1, red0, red1, watch, mem, bloom, preloaded, preload_s)
    result.web_counts = {k: web1[k] - web0.get(k, 0) for k in web1 if web1[k] - web0.get(k, 0)}
    result.window_ms = (run_start_ms, w0, w1)
    result.warc_bytes = warc1 - warc0
    result.probe_us = median_us(probes)
    if web.log_path.is_file():  # the node has stopped: all its requests are in the log
        entries = load_log(web.log_path)
        result.new_connections = connections_opened(entries, run_start_ms, (w0, w1))
        if web1:  # the realistic web: what it served, in the real web's terms
            result.web_mix = measure(entries, run_start_ms, (w0, w1))
    return result


def _warc_bytes(out: Path) -> int:
    """The size of the WARC files under ``out``, open ones included (a file sealed meanwhile is found under its
    new name or not at all: the window's difference then misses what it held, at most one file's worth)."""
    total = 0
    for path in out.rglob("*.warc.gz*"):
        with contextlib.suppress(FileNotFoundError):
            total += path.stat().st_size
    return total


def _wait_started(node: NodeProcess, watch: ProcessWatch, frontier: RedisFrontier) -> None:
    """Until the node's first request (page or robots.txt) is done: the warm-up starts then, so the time its
    processes take to start (long on a loaded machine) never eats into the warm-up or the window."""
    end = time.monotonic() + _START_TIMEOUT_S
    while not any(frontier.counters().values.get(k, 0) for k in ("fetched", "robots-fetched")):
        if time.monotonic() > end:
            raise RuntimeError(f"the crawl fetched nothing in {_START_TIMEOUT_S:.0f}s; see its node.log")
        _wait(node, watch, 0.25)


def _wait(node: NodeProcess, watch: ProcessWatch, seconds: float, probes: list[float] | None = None) -> None:
    """Poll the node's processes for ``seconds``; with ``probes``, time the speed probe at each poll too."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if node.proc.poll() is not None:
            raise RuntimeError(f"the crawl exited early with status {node.proc.returncode}; see its node.log")
        watch.poll()
        if probes is not None:
            probes.append(probe_us())
        time.sleep(min(_POLL_S, max(0.0, end - time.monotonic())))


def _result(
    seconds: float,
    cpu0: Any,
    cpu1: Any,
    red0: RedisSample,
    red1: RedisSample,
    watch: ProcessWatch,
    mem: int,
    bloom: int,
    preloaded: int,
    preload_s: float,
) -> RunResult:
    deltas = {k: red1.counters.get(k, 0) - red0.counters.get(k, 0) for k in red1.counters}
    cpu = cpu_by_kind(cpu0, cpu1)
    for kind in NODE_KINDS:
        cpu.setdefault(kind, 0.0)
    return RunResult(
        seconds=seconds,
        pages=deltas.get("fetched", 0),
        cpu=cpu,
        processes=count_by_kind(cpu1),
        peak_rss=dict(watch.peak_rss),
        redis_reads=red1.reads - red0.reads,
        redis_commands=red1.commands - red0.commands,
        redis_scripts=red1.script_calls - red0.script_calls,
        queued=red1.counters.get("queued", 0),
        used_memory=mem,
        bloom_bytes=bloom,
        counters={k: v for k, v in deltas.items() if v},
        preloaded=preloaded,
        preload_seconds=preload_s,
    )


__all__ = ["NodeProcess", "RunResult", "run_once"]
