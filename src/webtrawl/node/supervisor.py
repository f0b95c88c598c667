"""The node supervisor: one crawl on one machine.

It owns the output directory, the embedded Redis server (unless ``--redis`` names one), and the fetcher and parser
processes; it shows progress, decides when the crawl is over, and stops everything in the right order so that no
URL is lost: fetchers first (they finish and hand over their in-flight pages), then parsers (they store and
complete what they hold), then Redis (a clean SHUTDOWN writes the append-only file).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import signal
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import IO, Any

from rich.logging import RichHandler

from webtrawl.config import CrawlConfig, to_saved
from webtrawl.errors import InputError, StateError
from webtrawl.fetch.worker import FetcherArgs, run_fetcher
from webtrawl.frontier import Counters, FrontierSettings, RedisFrontier, connect_sync
from webtrawl.frontier.connect import SyncClient, is_cluster, mask_url
from webtrawl.metrics import MetricsExporter, ProgressDisplay, RateWindow, Snapshot, process_memory
from webtrawl.node.children import SPAWN, Child, Children
from webtrawl.node.guard import MemoryGuard
from webtrawl.node.presence import FetcherStats, Presence, heartbeat_ttl, resolve_node_id
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl.node.seeds import iter_seeds
from webtrawl.parse.worker import ParserArgs, run_parser
from webtrawl.store import seal_open_files

log = logging.getLogger("webtrawl.node")

SAVED_SETTINGS = "crawl.json"

_TICK = 0.5
_RECLAIM_EVERY = 5.0
_SEED_POLL = 1.0
_MAX_SEED_HOSTS = 10_000  # seed URLs kept for the host/domain scope


def load_saved_settings(out: Path) -> dict[str, Any] | None:
    """The settings an earlier run of this crawl saved, so that a plain resume crawls the same way."""
    path = out / SAVED_SETTINGS
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise StateError(f"cannot read the saved settings {path}: {exc}") from None
    if not isinstance(data, dict):
        raise StateError(f"{path} is not a settings object")
    return data


def _log_through(display: ProgressDisplay) -> Callable[[], None]:
    """While the live panel is up, log lines go through its console (above the panel) instead of tearing it."""
    if display.mode != "live":
        return lambda: None
    root = logging.getLogger()
    old = list(root.handlers)
    root.handlers = [RichHandler(console=display.console, show_path=False)]
    return lambda: setattr(root, "handlers", old)


def redis_used_memory(client: SyncClient) -> int:
    """Bytes of memory the Redis server uses (INFO memory; on a cluster the sum over its masters)."""
    if is_cluster(client):
        per_node = client.info("memory", target_nodes="primaries")
        if "used_memory" in per_node:  # a cluster of one master: its reply comes unwrapped
            per_node = {"only": per_node}
        return sum(int(info.get("used_memory", 0)) for info in per_node.values())
    return int(client.info("memory").get("used_memory", 0))


class Node:
    """``wait_for_seeds``: a ``trawl node`` joins a shared crawl that ``trawl seed`` fills, maybe later."""

    def __init__(self, cfg: CrawlConfig, *, wait_for_seeds: bool = False) -> None:
        if cfg.out is None:
            raise InputError("--out DIR is required: it holds the crawl's state and output")
        if (cfg.cluster or wait_for_seeds) and not cfg.redis:
            raise InputError("--redis URL is required: nodes share the frontier in that Redis")
        self.cfg = cfg
        self.out: Path = cfg.out
        self.wait_for_seeds = wait_for_seeds
        if wait_for_seeds:
            cfg.node_id = resolve_node_id(self.out, cfg.node_id)
        self.presence: Presence | None = None
        self.fetcher_stats = FetcherStats(cfg.effective_fetchers())
        self._node_rate = RateWindow(60.0)
        self.children = Children()
        self.stop_leasing = SPAWN.Event()
        self.fetchers_done = SPAWN.Event()
        self.disk_full = SPAWN.Event()  # set by a parser while its writes wait for disk space
        self.memory_guard = MemoryGuard(cfg.max_memory, SPAWN.Event())
        self.interrupts = 0
        self.redis: EmbeddedRedis | None = None
        self._lock_file: IO[str] | None = None

    # --- set-up ---------------------------------------------------------------------------------------------
    def _prepare_out(self) -> None:
        try:
            self.out.mkdir(parents=True, exist_ok=True)
            for sub in ("records", "warc"):
                (self.out / sub).mkdir(exist_ok=True)
            probe = self.out / ".write-test"
            probe.write_text("ok")
            probe.unlink()
        except OSError as exc:
            raise InputError(f"output directory {self.out} is not writable: {exc.strerror or exc}") from None
        self._lock_file = (self.out / "node.lock").open("w")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise InputError(f"another trawl process is already crawling into {self.out}") from None
        saved = to_saved(self.cfg)
        saved.pop("seeds_file", None)
        if saved.get("redis"):  # no password at rest: a resume names --redis (or TRAWL_REDIS) again
            saved["redis"] = mask_url(saved["redis"])
        (self.out / SAVED_SETTINGS).write_text(json.dumps(saved, indent=1, sort_keys=True))

    def _start_redis(self) -> str:
        if self.cfg.redis:
            return self.cfg.redis
        self.redis = EmbeddedRedis(self.out / "redis")
        self.redis.start()
        return self.redis.url

    def _socket_dir(self) -> Path:
        run = self.out / "run"
        if len(str(run.resolve())) < 80:
            run.mkdir(exist_ok=True)
            return run
        return Path(tempfile.mkdtemp(prefix="trawl-"))  # unix socket paths are limited to ~107 bytes

    def _seed(self, frontier: RedisFrontier) -> list[str]:
        new_seeds: list[str] = []
        for batch in iter_seeds(self.cfg.seeds, self.cfg.seeds_file):
            frontier.add(batch)
            new_seeds.extend(u.url for u in batch[: _MAX_SEED_HOSTS - len(new_seeds)])
        if new_seeds:
            frontier.add_seed_hosts(new_seeds)
        seeds = sorted(frontier.seed_hosts())
        if not seeds and self.wait_for_seeds:
            seeds = self._wait_for_seeds(frontier)
        if not seeds:
            raise InputError("no seeds: give URLs, --seeds FILE, or --out of an existing crawl to resume")
        return seeds

    def _wait_for_seeds(self, frontier: RedisFrontier) -> list[str]:
        """A node may start before ``trawl seed``: it waits (listed as waiting) until seeds arrive or a stop."""
        log.info("node %s: no seeds in this crawl yet; waiting for 'trawl seed'", self.cfg.node_id)
        while True:
            if self.presence is not None:
                if self.presence.stop_requested():
                    return []
                self.presence.beat("waiting", self._node_stats())
            seeds = sorted(frontier.seed_hosts())
            if seeds:
                return seeds
            time.sleep(_SEED_POLL)

    # --- run ------------------------------------------------------------------------------------------------
    def run(self) -> int:
        self._prepare_out()
        seal_open_files(self.out / "records")
        seal_open_files(self.out / "warc")
        redis_url = self._start_redis()
        try:
            return self._run(redis_url)
        finally:
            if self.redis is not None:
                self.redis.stop()

    def _run(self, redis_url: str) -> int:
        cfg = self.cfg
        self.client = connect_sync(redis_url, cluster=cfg.cluster)
        settings = FrontierSettings.from_config(cfg)
        frontier = RedisFrontier.open(self.client, settings)
        if cfg.redis:  # a shared Redis: announce this node, refuse a duplicate id, obey 'trawl stop'
            presence = Presence(self.client, settings.prefix, cfg.node_id, self.out, heartbeat_ttl(cfg.lease_ttl))
            presence.claim()
            presence.beat("starting", self._node_stats())
            self.presence = presence
        taken = frontier.reclaim_owner(cfg.node_id)
        if taken:
            log.info("took back %d URLs leased by a previous run of node %s", taken, cfg.node_id)
        seeds = self._seed(frontier)
        if not seeds:
            log.info("stopping: trawl stop requested")
            self._leave()
            return 0
        budget = None
        if cfg.max_pages:
            done = frontier.counters().get("fetched")
            budget = SPAWN.Value("q", max(0, cfg.max_pages - done))
        self.budget = budget
        sockets = self._socket_dir()
        self.children.pid_file = self.out / "children.json"
        self.memory_guard.check(process_memory({"supervisor": [os.getpid()]}))  # already over: never start leasing
        for i in range(cfg.effective_parsers()):
            args = ParserArgs(cfg, i, redis_url, sockets / f"parse-{i}.sock", self.out, seeds, self.fetchers_done)
            args.disk_full = self.disk_full
            self.children.add(Child("parser", i, run_parser, args))
        parser_sockets = [c.args.socket_path for c in self.children.of("parser")]
        for i in range(cfg.effective_fetchers()):
            fargs = FetcherArgs(cfg, i, redis_url, parser_sockets, self.stop_leasing, budget, self.fetcher_stats.array)
            fargs.pauses = (self.memory_guard.pause, self.disk_full)
            self.children.add(Child("fetcher", i, run_fetcher, fargs))
        old_int = signal.signal(signal.SIGINT, self._on_signal)
        old_term = signal.signal(signal.SIGTERM, self._on_signal)
        try:
            return self._watch(frontier)
        finally:
            signal.signal(signal.SIGINT, old_int)
            signal.signal(signal.SIGTERM, old_term)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.interrupts += 1
        if self.interrupts == 1:
            log.warning("stopping: finishing in-flight pages (press Ctrl-C again to quit at once)")
            self.stop_leasing.set()
        else:
            raise KeyboardInterrupt

    def _watch(self, frontier: RedisFrontier) -> int:
        cfg = self.cfg
        display = ProgressDisplay(cfg.progress)
        restore_logging = _log_through(display)
        exporter = MetricsExporter(cfg.metrics_port) if cfg.metrics_port else None
        if exporter is not None:
            exporter.start()
            log.info("Prometheus metrics on port %d", exporter.port)
        rates = RateWindow(60.0)
        started = time.monotonic()
        last_reclaim = started
        finished_seen = 0
        state = "crawling"
        try:
            while True:
                now = time.monotonic()
                for message in [] if self.stop_leasing.is_set() else self.children.restart_dead():
                    log.error(message)
                if now - last_reclaim >= _RECLAIM_EVERY:
                    last_reclaim = now
                    frontier.reclaim_expired()
                snapshot = self._snapshot(frontier, now - started, state)
                self.memory_guard.check(snapshot.rss_by_kind)
                rates.add(snapshot)
                if self.presence is not None and self.presence.due(now):
                    self.presence.beat(state, self._node_stats())
                display.update(snapshot, rates)
                if exporter is not None:
                    exporter.update(snapshot)
                if not self.stop_leasing.is_set():
                    reason = self._stop_reason(frontier, now - started)
                    finished_seen = finished_seen + 1 if reason == "finished" else 0
                    if reason and (reason != "finished" or finished_seen >= 2):
                        log.info("stopping: %s", reason)
                        self.stop_leasing.set()
                if self.stop_leasing.is_set():
                    state = "draining"
                    if self.presence is not None:  # no heartbeat while draining: this one lasts the whole drain
                        drain_s = self.cfg.timeouts.total + self.cfg.timeouts.robots + 10 + 60
                        self.presence.beat(state, self._node_stats(), round((drain_s + 30) * 1000))
                    self._drain()
                    display.update(self._snapshot(frontier, time.monotonic() - started, "stopped"), rates)
                    self._leave()
                    return 0
                time.sleep(_TICK)
        except KeyboardInterrupt:
            log.warning("quitting at once: leases of in-flight URLs are taken back on the next start")
            self.children.kill()
            return 130
        finally:
            display.close()
            restore_logging()
            if exporter is not None:
                exporter.stop()

    def _stop_reason(self, frontier: RedisFrontier, elapsed: float) -> str:
        if self.cfg.max_time and elapsed >= self.cfg.max_time:
            return f"--max-time {self.cfg.max_time:g}s reached"
        if self.budget is not None and self.budget.value <= 0:
            return f"--max-pages {self.cfg.max_pages} reached"
        if self.presence is not None and self.presence.stop_requested():
            return "trawl stop requested"
        if self.cfg.keep_running and self.wait_for_seeds:
            return ""
        if frontier.is_finished():
            return "finished"
        return ""

    def _node_stats(self) -> dict[str, int | float]:
        """This node's own numbers for its heartbeat (the frontier's counters are the whole crawl's)."""
        fetched = self.fetcher_stats.fetched()
        now = time.monotonic()
        self._node_rate.add(Snapshot(at=now, counters=Counters(values={"fetched": fetched})))
        return {
            "fetched": fetched,
            "rate": self._node_rate.rate("fetched"),
            "leases": self.fetcher_stats.leases(),
            "fetchers": self.cfg.effective_fetchers(),
            "parsers": self.cfg.effective_parsers(),
        }

    def _leave(self) -> None:
        if self.presence is not None:
            try:
                self.presence.leave(self._node_stats())
            except StateError as exc:
                log.warning("could not mark node %s as stopped: %s", self.cfg.node_id, exc)

    def _drain(self) -> None:
        grace = self.cfg.timeouts.total + self.cfg.timeouts.robots + 10
        if not self.children.wait("fetcher", grace):
            log.error("fetchers did not finish within %.0fs; killing them (their URLs stay leased)", grace)
            self.children.kill("fetcher")
        self.fetchers_done.set()
        if not self.children.wait("parser", 60):
            log.error("parsers did not finish within 60s; killing them (their URLs stay leased)")
            self.children.kill("parser")

    def _snapshot(self, frontier: RedisFrontier, elapsed: float, state: str) -> Snapshot:
        counters = frontier.counters()
        pids: dict[str, list[int]] = {
            "supervisor": [os.getpid()],
            "fetcher": self.children.pids("fetcher"),
            "parser": self.children.pids("parser"),
        }
        if self.redis is not None and self.redis.pid:
            pids["redis"] = [self.redis.pid]
        extra: dict[str, Any] = {"node": self.cfg.node_id, "elapsed": elapsed, "state": state}
        if self.presence is not None:  # this node's share, next to the crawl-wide counters
            extra.update({f"node_{k}": v for k, v in self._node_stats().items() if k in ("fetched", "leases")})
        return Snapshot(
            at=time.monotonic(),
            counters=counters,
            rss_by_kind=process_memory(pids),
            redis_used_memory=redis_used_memory(self.client),
            extra=extra,
        )
