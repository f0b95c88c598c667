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
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from types import FrameType
from typing import IO, Any

from rich.logging import RichHandler

from webtrawl.config import CrawlConfig, to_saved
from webtrawl.errors import InputError, RedisUnavailable, StateError
from webtrawl.fetch.args import STOP_GRACE_S, FetcherArgs
from webtrawl.fetch.fence import check_lease_ttl
from webtrawl.fetch.stats import FetcherStats
from webtrawl.frontier import Counters, FrontierSettings, RedisFrontier, connect_sync
from webtrawl.frontier.connect import mask_url, redis_used_memory
from webtrawl.frontier.retry import is_transient
from webtrawl.metrics import MetricsExporter, ProgressDisplay, RateWindow, Snapshot, process_memory
from webtrawl.metrics.procs import ProcessSampler
from webtrawl.node.children import SPAWN, Child, Children
from webtrawl.node.guard import MemoryGuard
from webtrawl.node.logs import LogSetup
from webtrawl.node.operate import Operations
from webtrawl.node.outage import RedisWatch
from webtrawl.node.presence import Presence, heartbeat_ttl, resolve_node_id
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl.node.saved import SAVED_SETTINGS
from webtrawl.node.seeds import iter_seeds
from webtrawl.parse.args import ParserArgs
from webtrawl.store import seal_open_files
from webtrawl.store.registry import STREAMS
from webtrawl.store.sinks import seal_left_open

log = logging.getLogger("webtrawl.node")


_TICK = 0.5
_RECLAIM_EVERY = 5.0
_SEED_POLL = 1.0
_MAX_SEED_HOSTS = 10_000  # seed URLs kept for the host/domain scope
# A stop (--max-time, --max-pages, trawl stop, SIGTERM, Ctrl-C) ends the node within 10 s: fetchers get their
# abandon grace plus time to hand back URLs and pages, parsers what is left of the bound (at least _PARSER_MIN_S).
_STOP_BOUND_S = 8.0
_FETCHER_EXIT_S = 3.0
_PARSER_MIN_S = 2.0


def _log_through(display: ProgressDisplay, log_format: str = "text") -> Callable[[], None]:
    """While the live panel is up, log lines go through its console (above the panel) instead of tearing it.
    Log files stay as they are; JSON lines on stderr too (they are for a shipper, not for a person)."""
    if display.mode != "live" or log_format == "json":
        return lambda: None
    root = logging.getLogger()
    old = list(root.handlers)
    files = [h for h in old if isinstance(h, logging.FileHandler)]
    root.handlers = [RichHandler(console=display.console, show_path=False), *files]
    return lambda: setattr(root, "handlers", old)


class Node:
    """``wait_for_seeds``: a ``trawl node`` joins a shared crawl that ``trawl seed`` fills, maybe later."""

    def __init__(self, cfg: CrawlConfig, *, wait_for_seeds: bool = False) -> None:
        if cfg.out is None:
            raise InputError("--out DIR is required: it holds the crawl's state and output")
        if (cfg.cluster or wait_for_seeds) and not cfg.redis:
            raise InputError("--redis URL is required: nodes share the frontier in that Redis")
        check_lease_ttl(cfg)
        self.cfg = cfg
        self.out: Path = cfg.out
        self.wait_for_seeds = wait_for_seeds
        if wait_for_seeds:
            cfg.node_id = resolve_node_id(self.out, cfg.node_id)
        self.presence: Presence | None = None
        self.fetcher_stats = FetcherStats(cfg.effective_fetchers())
        self.budget: Synchronized[int] | None = None  # pages the fetchers may still reserve under --max-pages
        self.pages_before = 0  # the crawl's fetches before this run (--max-pages counts the whole crawl)
        self._node_rate = RateWindow(60.0)
        self.children = Children()
        self.stop_leasing = SPAWN.Event()
        self.fetchers_done = SPAWN.Event()
        self.disk_full = SPAWN.Event()  # set by a parser while its writes wait for disk space
        self.memory_guard = MemoryGuard(cfg.max_memory, SPAWN.Event())
        self.interrupts = 0
        self.redis: EmbeddedRedis | None = None
        self._lock_file: IO[str] | None = None
        self.ops: Operations | None = None
        self._sampler = ProcessSampler()
        self._processes: dict[str, dict[str, float]] = {}
        self.log_setup = LogSetup(
            cfg.log_format,
            self.out / "logs",
            cfg.log_max_bytes,
            cfg.log_backups,
            logging.getLogger().getEffectiveLevel(),
            cfg.node_id,
        )

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
        for sinks in ("items_to", "records_to"):  # the same for sink URLs (or use ~/.pgpass / PGPASSWORD)
            saved[sinks] = [mask_url(url) for url in saved.get(sinks, [])]
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
        for batch in iter_seeds([*self.cfg.seeds, *self.cfg.sitemap], self.cfg.seeds_file):
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
        self._check_components()
        self._prepare_out()
        self.log_setup.apply("trawl")
        for stream in STREAMS:  # every stream a killed parser may have left open
            seal_open_files(self.out / stream)
        seal_left_open([*self.cfg.items_to, *self.cfg.records_to], self.cfg.node_id)
        redis_url = self._start_redis()
        try:
            return self._run(redis_url)
        finally:
            if self.redis is not None:
                self.redis.stop()

    def _check_components(self) -> None:
        """User extraction code and rules fail here, once, with file and line: not in every parser later; --render
        without Chromium or Playwright too, before anything starts. The stages are imported only when used: the
        supervisor stays small (the children import their own)."""
        if self.cfg.extracting():
            from webtrawl.extract import absolute_spec, build_extraction

            self.cfg.extract = absolute_spec(self.cfg.extract)
            extraction = build_extraction(self.cfg)
            if extraction is not None and self.cfg.recrawl_after <= 0 and extraction.sets_recrawl():
                raise InputError(
                    f"{self.cfg.extract}: a rule's recrawl_after needs --recrawl-after (which starts rounds)"
                )
        if self.cfg.rendering():
            from webtrawl.fetch.render.chromium import check_rendering

            check_rendering(self.cfg)

    def _run(self, redis_url: str) -> int:
        cfg = self.cfg
        self.redis_url = redis_url
        self.client = connect_sync(redis_url, cluster=cfg.cluster)
        settings = FrontierSettings.from_config(cfg)
        frontier = RedisFrontier.open(self.client, settings)
        if cfg.redis:  # a shared Redis: announce this node, refuse a duplicate id, obey 'trawl stop'
            presence = Presence(self.client, settings.prefix, cfg.node_id, self.out, heartbeat_ttl(cfg.lease_ttl))
            presence.claim()
            presence.beat("starting", self._node_stats())
            self.presence = presence
        self.ops = Operations(cfg, self.out, self.client, settings.prefix)
        taken = frontier.reclaim_owner(cfg.node_id)
        if taken:
            log.info("took back %d URLs leased by a previous run of node %s", taken, cfg.node_id)
        seeds = self._seed(frontier)
        if not seeds:
            log.info("stopping: trawl stop requested")
            self._leave()
            return 0
        if cfg.recrawl_after > 0:  # a new round: the pages of the recrawl set whose time has come
            log.info("recrawl: %d pages due again", frontier.requeue_due())
        budget = None
        if cfg.max_pages:
            self.pages_before = frontier.counters().get("fetched")
            budget = SPAWN.Value("q", max(0, cfg.max_pages - self.pages_before))
        self.budget = budget
        sockets = self._socket_dir()
        self.children.pid_file = self.out / "children.json"
        self.memory_guard.check(process_memory({"supervisor": [os.getpid()]}))  # already over: never start leasing
        for i in range(cfg.effective_parsers()):
            args = ParserArgs(cfg, i, redis_url, sockets / f"parse-{i}.sock", self.out, seeds, self.fetchers_done)
            args.disk_full = self.disk_full
            self.children.add(Child("parser", i, "webtrawl.parse.worker:run_parser", args, log_setup=self.log_setup))
        parser_sockets = [c.args.socket_path for c in self.children.of("parser")]
        for i in range(cfg.effective_fetchers()):
            fargs = FetcherArgs(cfg, i, redis_url, parser_sockets, self.stop_leasing, budget, self.fetcher_stats.array)
            fargs.pauses = (self.memory_guard.pause, self.disk_full)
            self.children.add(Child("fetcher", i, "webtrawl.fetch.worker:run_fetcher", fargs, log_setup=self.log_setup))
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
        restore_logging = _log_through(display, cfg.log_format)
        ops = self.ops
        assert ops is not None
        ops.start()
        exporter = MetricsExporter(cfg.metrics_port) if cfg.metrics_port else None
        if exporter is not None:
            exporter.start()
            log.info("Prometheus metrics on port %d", exporter.port)
        rates = RateWindow(60.0)
        watch = self.watch = RedisWatch(self.redis_url, ops.alerts, self.redis)
        presence = self.presence
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
                    watch.run(frontier.reclaim_expired)
                snapshot = watch.run(self._snapshot, frontier, now - started, state)
                if snapshot is not None:  # None: Redis is away, the node pauses (one alert) until it is back
                    self.memory_guard.check(snapshot.rss_by_kind)
                    rates.add(snapshot)
                    ops.observe(snapshot, rates, now - started, pages_done=self._pages_done())
                    if presence is not None and presence.due(now):
                        watch.run(presence.beat, state, self._node_stats())
                    display.update(snapshot, rates)
                    if exporter is not None:
                        exporter.update(snapshot)
                    ops.publish(snapshot, rates, self._node_stats())
                if not self.stop_leasing.is_set():
                    reason = self._stop_reason(frontier, now - started)
                    finished_seen = finished_seen + 1 if reason == "finished" else 0
                    if reason and (reason != "finished" or finished_seen >= 2):
                        log.info("stopping: %s", reason)
                        self.stop_leasing.set()
                if self.stop_leasing.is_set():
                    state = "draining"
                    if snapshot is not None:
                        snapshot.extra["state"] = state
                        ops.publish(snapshot, rates, self._node_stats())
                    if presence is not None:  # no heartbeat while draining: this one lasts the whole drain
                        drain_ms = round((_STOP_BOUND_S + 10 + 30) * 1000)
                        watch.run(presence.beat, state, self._node_stats(), drain_ms)
                    self._drain()
                    final = watch.run(self._snapshot, frontier, time.monotonic() - started, "stopped")
                    if final is not None:
                        rates.add(final)
                        ops.observe(final, rates, final.at - started, pages_done=self._pages_done(), final=True)
                        display.update(final, rates)
                        ops.publish(final, rates, self._node_stats())
                    self._leave()
                    if watch.too_long():
                        raise RedisUnavailable(f"{watch.too_long()}: the node stopped")
                    return 0
                time.sleep(_TICK)
        except KeyboardInterrupt:
            log.warning("quitting at once: leases of in-flight URLs are taken back on the next start")
            self.children.kill()
            return 130
        finally:
            display.close()
            restore_logging()
            ops.stop()
            if exporter is not None:
                exporter.stop()

    def _pages_done(self) -> int | None:
        """Pages --max-pages has used up, as the stop condition counts them: the crawl's fetches before this run
        plus the URLs this run's fetchers ended. Never the budget they merely reserved: a reservation may be given
        back (robots.txt first, a retry, an abandoned request), and progress must not run backwards."""
        if self.budget is None:
            return None
        return min(self.cfg.max_pages, self._pages_used())

    def _pages_used(self) -> int:
        return self.pages_before + self.fetcher_stats.ended()

    def _budget_spent(self) -> bool:
        """--max-pages is reached: its pages are done, or the budget is gone with nothing in flight that could
        give some of it back (a fetcher restarted after a kill -9 never returns what it had reserved)."""
        if self.budget is None:
            return False
        if self._pages_used() >= self.cfg.max_pages:
            return True
        return self.budget.value <= 0 and self.fetcher_stats.leases() == 0

    def _stop_reason(self, frontier: RedisFrontier, elapsed: float) -> str:
        if self.cfg.max_time and elapsed >= self.cfg.max_time:
            return f"--max-time {self.cfg.max_time:g}s reached"
        if self._budget_spent():
            return f"--max-pages {self.cfg.max_pages} reached"
        return self.watch.too_long() or self.watch.run(self._shared_stop_reason, frontier) or ""

    def _shared_stop_reason(self, frontier: RedisFrontier) -> str:
        if self.presence is not None and self.presence.stop_requested():
            return "trawl stop requested"
        if self.cfg.keep_running and self.wait_for_seeds:
            return ""
        if frontier.is_finished():
            return "finished"
        return ""

    def _node_stats(self) -> dict[str, int | float | str]:
        """This node's own numbers for its heartbeat (the frontier's counters are the whole crawl's)."""
        fetched = self.fetcher_stats.fetched()
        now = time.monotonic()
        self._node_rate.add(Snapshot(at=now, counters=Counters(values={"fetched": fetched})))
        stats: dict[str, int | float | str] = {
            "fetched": fetched,
            "rate": self._node_rate.rate("fetched"),
            "leases": self.fetcher_stats.leases(),
            "fetchers": self.cfg.effective_fetchers(),
            "parsers": self.cfg.effective_parsers(),
            "rss": int(sum(p["rss"] for p in self._processes.values())),
            "cpu": sum(p["cpu"] for p in self._processes.values()),
        }
        if self.ops is not None:
            stats.update(self.ops.heartbeat_fields())
        return stats

    def _leave(self) -> None:
        if self.presence is not None:
            try:
                self.presence.leave(self._node_stats())
            except Exception as exc:
                if not isinstance(exc, StateError) and not is_transient(exc):
                    raise
                log.warning("could not mark node %s as stopped: %s", self.cfg.node_id, exc)

    def _drain(self) -> None:
        """Fetchers first (they abandon requests still running after a short grace), then parsers; each kind is
        killed if it overstays, so a stop ends within ~_STOP_BOUND_S whatever the web does. A killed child's URLs
        stay leased to this node and are taken back when it starts again: never lost."""
        deadline = time.monotonic() + _STOP_BOUND_S
        grace = STOP_GRACE_S + _FETCHER_EXIT_S
        if not self.children.wait("fetcher", grace):
            log.error("fetchers did not finish within %.0fs; killing them (their URLs stay leased)", grace)
            self.children.kill("fetcher")
        self.fetchers_done.set()
        grace = max(_PARSER_MIN_S, deadline - time.monotonic())
        if not self.children.wait("parser", grace):
            log.error("parsers did not finish within %.0fs; killing them (their URLs stay leased)", grace)
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
        processes = self._sampler.sample(pids)
        self._processes = processes
        return Snapshot(
            at=time.monotonic(),
            counters=counters,
            rss_by_kind={kind: int(p["rss"]) for kind, p in processes.items()},
            redis_used_memory=redis_used_memory(self.client),
            extra=extra,
            processes=processes,
        )
