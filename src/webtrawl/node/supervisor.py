"""The node supervisor: one crawl on one machine.

It owns the output directory, the embedded Redis server (unless ``--redis`` names one), and the fetcher and parser
processes; it shows progress, decides when the crawl is over, and stops everything in the right order so that no
URL is lost: fetchers first (they finish and hand over their in-flight pages), then parsers (they store and complete
what they hold), then Redis (a clean SHUTDOWN writes the append-only file). Start-up: node/startup.py; the stop
rules and the drain: node/stopping.py; what it shares with a host application: node/embed.py.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any

from webtrawl.config import CrawlConfig
from webtrawl.errors import ChildFailed, InputError, StateError
from webtrawl.fetch.fence import check_lease_ttl
from webtrawl.fetch.stats import FetcherStats
from webtrawl.frontier import Counters, FrontierSettings, RedisFrontier, connect_sync
from webtrawl.frontier.connect import check_node_redis, redis_memory, refusing_full
from webtrawl.frontier.retry import is_transient
from webtrawl.metrics import MetricsExporter, ProgressDisplay, RateWindow, Snapshot, process_memory
from webtrawl.metrics.procs import ProcessSampler
from webtrawl.node import startup
from webtrawl.node.children import CONTEXT, Child, Children
from webtrawl.node.embed import log_through, stop_signals
from webtrawl.node.guard import MemoryGuard
from webtrawl.node.logs import LogSetup
from webtrawl.node.operate import Operations, shown_settings
from webtrawl.node.outage import RedisWatch
from webtrawl.node.presence import Presence, StopWatch, heartbeat_ttl, resolve_node_id
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl.node.saved import load_saved_settings
from webtrawl.node.seeds import check_seeds, new_crawl
from webtrawl.node.seedscope import SeedScope
from webtrawl.node.startreqs import SpiderStart
from webtrawl.node.stopping import STOP_BOUND_S, OutDir, PageBudget, drain, ended_badly, local_stop_reason, stop_reason
from webtrawl.parse.fence import check_process_ttl
from webtrawl.parse.settle import save_states, settle_all
from webtrawl.parse.simhash import NearDuplicateIndex
from webtrawl.store import seal_open_files
from webtrawl.store.batchlog import DIRECTORY as BATCH_LOGS
from webtrawl.store.batchlog import rollback_begun
from webtrawl.store.registry import STREAMS, seal_left_open, sink_urls

log = logging.getLogger("webtrawl.node")

_TICK = 0.5
_RECLAIM_EVERY = 5.0


class Node:
    """``wait_for_seeds``: a ``trawl node`` joins a shared crawl that ``trawl seed`` fills, maybe later.
    ``configure_logging``: make the node's logging the process's (root handlers: stderr in the crawl's format, the
    rotated ``<out>/logs/trawl.log``, the live panel's console), as the command line does; an application that
    embeds the crawler keeps its own handlers by default."""

    def __init__(self, cfg: CrawlConfig, *, wait_for_seeds: bool = False, configure_logging: bool = False) -> None:
        crawl = cfg.crawl
        if crawl.out is None:
            raise InputError("--out DIR is required: it holds the crawl's state and output")
        if (crawl.cluster or wait_for_seeds) and not crawl.redis:
            raise InputError("--redis URL is required: nodes share the frontier in that Redis")
        check_lease_ttl(cfg)
        check_process_ttl(cfg)
        self.out: Path = crawl.out
        if wait_for_seeds:
            cfg = cfg.with_options(node_id=resolve_node_id(self.out, crawl.node_id))
        self.cfg = cfg
        self.wait_for_seeds, self.configure_logging = wait_for_seeds, configure_logging
        self.presence: Presence | None = None
        self.stops: StopWatch | None = None  # 'trawl stop' heard through Redis, set once Redis is reached
        self.fetcher_stats = FetcherStats(cfg.crawl.effective_fetchers())
        self.budget = PageBudget(cfg.crawl.max_pages, self.fetcher_stats)
        self._node_rate = RateWindow(60.0)
        self.children = Children()
        self.stop_leasing = CONTEXT.Event()
        self.fetchers_done = CONTEXT.Event()
        self.disk_full = CONTEXT.Event()  # set by a parser while its writes wait for disk space
        self.redis_full = CONTEXT.Event()  # set while Redis is at its maxmemory or cannot save (a full disk)
        self.memory_guard = MemoryGuard(cfg.operations.max_memory, CONTEXT.Event())
        self.interrupts = 0
        self.counters: Counters | None = None  # the crawl's counters at the last tick (at the end: webtrawl's stats)
        self.redis: EmbeddedRedis | None = None
        self.ops: Operations | None = None
        self._sampler = ProcessSampler()
        self.start = SpiderStart()  # --spider: its start_requests() (start_urls), seeds with their routes, once
        self.allowed_domains: tuple[str, ...] = ()  # --spider: its allowed_domains, which the seeds are kept to
        self._processes: dict[str, dict[str, float]] = {}
        ops = cfg.operations
        level = logging.getLogger().getEffectiveLevel()
        self.log_setup = LogSetup(
            ops.log_format,
            self.out / "logs",
            ops.log_max_bytes,
            ops.log_backups,
            level,
            cfg.crawl.node_id,
            cfg.output.encrypt_to,
        )

    # --- run ------------------------------------------------------------------------------------------------
    def run(self) -> int:
        fresh = new_crawl(self.cfg)  # a new crawl's own new Redis
        self.cfg, self.start, self.allowed_domains = startup.check_components(self.cfg, fresh)
        check_seeds(self.cfg, bool(self.start.ready))  # a spider without start_urls: before out/ and Redis exist
        lock_file = startup.prepare_out(self.cfg, self.out)
        try:
            if self.configure_logging:
                self.log_setup.apply("trawl")
            rollback_begun(self.out / BATCH_LOGS)  # a killed node's begun batches, before their files are sealed
            for stream in STREAMS:  # every stream a killed parser may have left open
                seal_open_files(self.out / stream)
            seal_left_open(sink_urls(self.cfg.output, load_saved_settings(self.out)), self.cfg.crawl.node_id)
            redis_url = self._start_redis()
            try:
                return self._run(redis_url)
            finally:
                if self.redis is not None:
                    self.redis.stop()
        finally:
            self.children.close()  # a child still alive now (the node failed) ends with it, as at the node's death
            # released here, not at the node's collection: a resume from the same program found it still locked
            lock_file.close()

    def _start_redis(self) -> str:
        if self.cfg.crawl.redis:
            return self.cfg.crawl.redis
        self.redis = EmbeddedRedis(self.out / "redis")
        self.redis.start()
        return self.redis.url

    def _run(self, redis_url: str) -> int:
        cfg, crawl = self.cfg, self.cfg.crawl
        self.redis_url = redis_url
        self.client = connect_sync(redis_url, cluster=crawl.cluster, writes=True)
        check_node_redis(self.client, redis_url)
        startup.save_settings(cfg, self.out)
        settings = FrontierSettings.from_config(cfg)
        with refusing_full(redis_url):  # a Redis too full to start in: one clear error (later, the node waits)
            frontier = self._open(settings)
        with stop_signals(self._on_signal):  # from here on a stop signal drains, also while waiting for seeds
            try:
                return self._seed_and_watch(frontier, settings, redis_url)
            except KeyboardInterrupt:  # a second Ctrl-C, while starting or crawling
                log.warning("quitting at once: leases of in-flight URLs are taken back on the next start")
                self.children.kill()
                return 130

    def _open(self, settings: FrontierSettings) -> RedisFrontier:
        cfg, crawl = self.cfg, self.cfg.crawl
        frontier = RedisFrontier.open(self.client, settings)
        startup.check_shape(cfg, frontier.meta())  # a shared crawl's: a crawl of one machine's was checked by its out/
        # 'trawl stop' (--redis for a shared crawl, --out for one on this machine) raises this crawl's stop generation
        self.stops = StopWatch(self.client, settings.prefix, crawl.node_id)
        if crawl.redis:  # a shared Redis: announce this node, refuse a duplicate id
            ttl = heartbeat_ttl(cfg.frontier.lease_ttl)
            presence = Presence(self.client, settings.prefix, crawl.node_id, self.out, ttl)
            presence.claim()
            presence.beat("starting", self._node_stats())
            self.presence = presence
        self.ops = Operations(cfg.operations, crawl, shown_settings(cfg), self.out, self.client, settings.prefix)
        # the batches its parsers had stored when the node was killed are completed before their leases are taken back
        neardup = NearDuplicateIndex(self.client, settings.prefix, frontier.shards)
        settle_all(self.out / BATCH_LOGS, frontier, neardup, functools.partial(save_states, self.client))
        taken = frontier.reclaim_owner(crawl.node_id)
        if taken:
            log.info("took back %d URLs leased by a previous run of node %s", taken, crawl.node_id)
        return frontier

    def _seed_and_watch(self, frontier: RedisFrontier, settings: FrontierSettings, redis_url: str) -> int:
        cfg, crawl = self.cfg, self.cfg.crawl
        scope = SeedScope(cfg, self.out, self.allowed_domains)
        # a page never held is new; the URLs ended before (of this round) count against --max-pages
        announce_new, self.budget.before = startup.start_round(cfg, frontier, self.client, settings.prefix)
        seeds = startup.seed(
            cfg,
            self.start,
            scope,
            frontier,
            self._stop_asked,
            self.presence,
            self._node_stats,
            wait=self.wait_for_seeds,
        )
        if not seeds:
            if not self.interrupts:  # a signal said so already
                log.info("stopping: trawl stop requested")
            self.counters = frontier.counters()  # the result's stats: stopped before its first tick, seeds queued
            self._leave()
            return 0
        if cfg.discovery.recrawl_after > 0:  # a new round: the pages of the recrawl set whose time has come
            log.info("recrawl: %d pages due again", frontier.requeue_due())
        if crawl.max_pages:  # "stored" counts as the fetchers count (a URL robots.txt refused too), not "fetched"
            self.budget.shared = CONTEXT.Value("q", max(0, crawl.max_pages - self.budget.before))
        return self._watch(frontier, functools.partial(self._add_children, settings, redis_url, seeds, announce_new))

    def _add_children(self, settings: FrontierSettings, redis_url: str, seeds: list[str], announce_new: bool) -> None:
        cfg = self.cfg
        sockets = startup.socket_dir(self.out)
        self.children.pid_file = self.out / "children.json"
        self.memory_guard.check(process_memory({"supervisor": [os.getpid()]}))  # already over: never start leasing
        for i in range(cfg.crawl.effective_parsers()):
            args = startup.parser_args(
                cfg,
                settings,
                i,
                redis_url=redis_url,
                socket_path=sockets / f"parse-{i}.sock",
                out_dir=self.out,
                seeds=seeds,
                fetchers_done=self.fetchers_done,
                disk_full=self.disk_full,
                announce_new=announce_new,
            )
            self.children.add(Child("parser", i, "webtrawl.parse.worker:run_parser", args, log_setup=self.log_setup))
        parser_sockets = [c.args.socket_path for c in self.children.of("parser")]
        for i in range(cfg.crawl.effective_fetchers()):
            fargs = startup.fetcher_args(
                cfg,
                settings,
                i,
                redis_url=redis_url,
                parser_sockets=parser_sockets,
                stop=self.stop_leasing,
                budget=self.budget.shared,
                stats=self.fetcher_stats.array,
                pauses=(self.memory_guard.pause, self.disk_full, self.redis_full),
                allowed_domains=self.allowed_domains,
            )
            self.children.add(Child("fetcher", i, "webtrawl.fetch.worker:run_fetcher", fargs, log_setup=self.log_setup))

    def _stop_asked(self) -> bool:
        """A stop signal came, or 'trawl stop' (before the children run: the watch loop has its own stop reasons)."""
        return self.stop_leasing.is_set() or (self.stops is not None and self.stops.stop_requested())

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """The first stop signal drains; a second Ctrl-C or SIGTERM quits at once. A hang-up never does: the shell
        and the kernel may both send it when a terminal closes, and nobody is there to have pressed anything."""
        if self.interrupts and signum != signal.SIGHUP:
            self.children.quit_at_once()
        if not self.interrupts:
            name = signal.Signals(signum).name
            log.warning("stopping (%s): finishing in-flight pages (press Ctrl-C again to quit at once)", name)
            self.stop_leasing.set()
        self.interrupts += 1

    def _watch(self, frontier: RedisFrontier, start_children: functools.partial[None]) -> int:
        ops_cfg = self.cfg.operations
        embedded = None if self.configure_logging else logging.getLogger("webtrawl.progress")  # the app's logging
        display = ProgressDisplay(ops_cfg.progress, line_format=self.log_setup.progress_line(), logger=embedded)
        restore_logging = log_through(display, ops_cfg.log_format) if self.configure_logging else lambda: None
        ops = self.ops
        assert ops is not None
        exporter = MetricsExporter(ops_cfg.metrics_port) if ops_cfg.metrics_port else None
        rates = RateWindow(60.0)
        watch = RedisWatch(self.redis_url, ops.alerts, self.redis, full=self.redis_full)
        out_dir = OutDir(self.out, embedded=self.redis is not None)
        presence = self.presence
        started = time.monotonic()
        last_reclaim = started
        finished_seen = 0
        state = "crawling"
        shown: Snapshot | None = None
        try:
            ops.start()  # its port and the metrics' are bound before any child starts: one in use is one error line
            if exporter is not None:
                exporter.start()
                log.info("Prometheus metrics on port %d", exporter.port)
            start_children()
            while True:
                now = time.monotonic()
                for message in [] if self.stop_leasing.is_set() else self.children.restart_dead():
                    log.error(message)
                if now - last_reclaim >= _RECLAIM_EVERY:
                    last_reclaim = now
                    watch.run(frontier.reclaim_expired)
                snapshot = watch.run(self._snapshot, frontier, now - started, state)
                watch.tick_replicas(self.client, frontier.core.settings.replicas)
                if snapshot is not None:  # None: Redis is away, the node pauses (one alert) until it is back
                    self.memory_guard.check(snapshot.rss_by_kind)
                    watch.room(self.redis_memory)
                    rates.add(snapshot)
                    ops.observe(snapshot, rates, now - started, pages_done=self.budget.done())
                    if presence is not None and presence.due(now):
                        watch.run(presence.beat, state, self._node_stats())
                    display.update(snapshot, rates)
                    if exporter is not None:
                        exporter.update(snapshot)
                    ops.publish(snapshot, rates, self._node_stats())
                    shown = snapshot
                elif shown is not None:  # the dashboard keeps the last figures, says they are old, shows the alert
                    away = dataclasses.replace(shown, extra={**shown.extra, "state": "paused: Redis out of reach"})
                    ops.publish(away, rates, self._node_stats())
                if self.cfg.fetch.proxy:
                    ops.report_proxies(self.fetcher_stats.without_proxy(), self.cfg.crawl.effective_fetchers())
                if not self.stop_leasing.is_set():
                    crawl, elapsed = self.cfg.crawl, now - started
                    reason = (
                        local_stop_reason(crawl, self.budget, elapsed, out_dir)
                        or watch.too_long()
                        or watch.run(stop_reason, crawl, self.budget, self.stops, frontier, elapsed)
                        or ""
                    )
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
                        drain_ms = round((STOP_BOUND_S + 10 + 30) * 1000)
                        watch.run(presence.beat, state, self._node_stats(), drain_ms)
                    drain(self.children, self.fetchers_done)
                    final = watch.run(self._snapshot, frontier, time.monotonic() - started, "stopped")
                    if final is not None:
                        rates.add(final)
                        ops.observe(final, rates, final.at - started, pages_done=self.budget.done(), final=True)
                        display.update(final, rates)
                        ops.publish(final, rates, self._node_stats())
                    self._leave()
                    ended_badly(watch.too_long(), out_dir)
                    return 0
                time.sleep(_TICK)
        except ChildFailed:  # a child that cannot start: the others stop as at the end of a crawl, then the error
            self.stop_leasing.set()
            drain(self.children, self.fetchers_done)
            self._leave()
            raise
        finally:
            display.close()
            restore_logging()
            ops.stop()
            if exporter is not None:
                exporter.stop()

    def _node_stats(self) -> dict[str, int | float | str]:
        """This node's own numbers for its heartbeat (the frontier's counters are the whole crawl's)."""
        fetched = self.fetcher_stats.fetched()
        now = time.monotonic()
        self._node_rate.add(Snapshot(at=now, counters=Counters(values={"fetched": fetched})))
        stats: dict[str, int | float | str] = {
            "fetched": fetched,
            "rate": self._node_rate.rate("fetched"),
            "leases": self.fetcher_stats.leases(),
            "fetchers": self.cfg.crawl.effective_fetchers(),
            "parsers": self.cfg.crawl.effective_parsers(),
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
                log.warning("could not mark node %s as stopped: %s", self.cfg.crawl.node_id, exc)

    def _snapshot(self, frontier: RedisFrontier, elapsed: float, state: str) -> Snapshot:
        counters = self.counters = frontier.counters()
        pids: dict[str, list[int]] = {
            "supervisor": [os.getpid()],
            "fetcher": self.children.pids("fetcher"),
            "parser": self.children.pids("parser"),
        }
        if self.redis is not None and self.redis.pid:
            pids["redis"] = [self.redis.pid]
        extra: dict[str, Any] = {"node": self.cfg.crawl.node_id, "elapsed": elapsed, "state": state}
        if self.presence is not None:  # this node's share, next to the crawl-wide counters
            extra.update({f"node_{k}": v for k, v in self._node_stats().items() if k in ("fetched", "leases")})
        processes = self._sampler.sample(pids)
        self._processes = processes
        memory = self.redis_memory = redis_memory(self.client)
        return Snapshot(
            at=time.monotonic(),
            counters=counters,
            rss_by_kind={kind: int(p["rss"]) for kind, p in processes.items()},
            redis_used_memory=memory.used,
            redis_full=memory.full,
            redis_max_memory=memory.limit,
            extra=extra,
            processes=processes,
        )
