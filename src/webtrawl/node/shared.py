"""Commands for a crawl shared by many nodes: ``trawl seed``, ``trawl status`` and ``trawl stop``.

They only talk to Redis (plain or cluster) and never start a crawler: seeding is a separate step so that a seed
file of any size is read once, streamed in batches, instead of by every node that joins.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from webtrawl.config import CrawlConfig
from webtrawl.errors import InputError
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.frontier.bloom import grown_note
from webtrawl.frontier.connect import (
    SyncClient,
    check_no_eviction,
    redis_used_memory,
    refusing_full,
)
from webtrawl.metrics import format_stats
from webtrawl.metrics.progress import compute
from webtrawl.metrics.report import (
    DROP_PREFIX,
    ERR_PREFIX,
    expected_false_positives,
    format_bytes,
    format_duration,
    reasons,
)
from webtrawl.node.presence import NodeStatus, list_nodes, request_stop
from webtrawl.node.seeds import MAX_SEED_HOSTS, SeedProgress, iter_seeds, sitemap_seeds
from webtrawl.node.startup import check_shape

log = logging.getLogger("webtrawl.node")


def _client(cfg: CrawlConfig, *, writes: bool = False) -> SyncClient:
    if not cfg.crawl.redis:
        raise InputError("--redis URL is required (the Redis or Redis Cluster node the crawl lives in)")
    return connect_sync(cfg.crawl.redis, cluster=cfg.crawl.cluster, writes=writes)


def seed(cfg: CrawlConfig, path: Path | None, urls: list[str]) -> dict[str, Any]:
    """Stream seed URLs into the shared frontier; creates the crawl (shards, Bloom size) if it does not exist.

    Memory stays flat whatever the file's size: one batch of URLs at a time, no per-process seen cache.
    """
    if path is None and not urls and not cfg.discovery.sitemap:
        raise InputError("give a seeds FILE (- for stdin), URLs or --sitemap URLs")
    client = _client(cfg, writes=True)
    url = cfg.crawl.redis or ""
    check_no_eviction(client, url)
    with refusing_full(url):  # what was added so far stays: seeding again adds the rest
        frontier = RedisFrontier.open(client, FrontierSettings.from_config(cfg, recent_urls=0))
        check_shape(cfg, frontier.meta())
        kept = 0
        progress = SeedProgress()
        filters = frontier.counters().bloom_filters
        try:
            for batch in iter_seeds([*urls, *sitemap_seeds(cfg.discovery.sitemap)], path):
                progress.count(len(batch), frontier.add(batch))
                if kept < MAX_SEED_HOSTS:
                    kept += frontier.add_seed_hosts(u.url for u in batch[: MAX_SEED_HOSTS - kept])
        except InputError as exc:
            raise progress.failed(exc) from None
        totals: dict[str, Any] = {
            "read": progress.read,
            "added": progress.added,
            "seen": progress.seen,
            "dropped": progress.dropped,
        }
        grown = frontier.counters().bloom_filters
        if grown > filters:  # while the crawl is still only seeds, re-creating it bigger is cheap
            log.warning(
                "%s (it grew while seeding: --expected-urls is given when the crawl is created)", grown_note(grown)
            )
    client.close()
    return totals


def print_seed_result(totals: dict[str, Any]) -> None:
    dropped = ", ".join(f"{n} {reason}" for reason, n in sorted(totals["dropped"].items())) or "none"
    print(
        f"read {totals['read']} seed URLs: {totals['added']} added, {totals['seen']} already seen, dropped: {dropped}"
    )


def status(cfg: CrawlConfig, client: SyncClient | None = None) -> dict[str, Any]:
    """The whole crawl's counters (summed over shards and masters) and every node seen in the last day.

    Progress: against the frontier's size (fetched of fetched + queued + in flight) at the live nodes' summed
    rate; ``--max-pages`` and ``--max-time`` are each node's own and not known here."""
    own = client is None
    client = _client(cfg) if client is None else client
    settings = FrontierSettings.from_config(cfg)
    frontier = RedisFrontier.open(client, settings, create=False)
    counters = frontier.counters()
    nodes = list_nodes(client, settings.prefix)
    used = redis_used_memory(client)
    meta = frontier.meta()
    if own:
        client.close()
    now_ms = int(time.time() * 1000)
    rows = [n.as_dict(now_ms) for n in nodes]
    rate = sum(n["rate"] for n in rows if n["live"])
    written = sum(n["written"] for n in rows)
    downloaded = sum(n["downloaded"] for n in rows)
    report_progress = compute(counters, rate, bytes_written=written, bytes_downloaded=downloaded)
    return {
        "counters": counters.values,
        "ready_hosts": counters.ready_hosts,
        "waiting_hosts": counters.waiting_hosts,
        "finished": counters.queued == 0 and counters.inflight == 0 and counters.get("added") > 0,
        "redis_used_memory": used,
        "meta": meta,
        "nodes": rows,
        "live_nodes": sum(1 for n in nodes if n.live),
        "rates": {"pages_s": rate},
        "progress": report_progress.as_dict(),
        "errors": reasons(counters, ERR_PREFIX),
        "dropped": reasons(counters, DROP_PREFIX),
        "alerts": [{"node": n["id"], "name": a} for n in rows for a in n["alerts"]],
        "bloom_expected_false_positives": expected_false_positives(counters),
        "_counters": counters,
    }


def _node_line(node: dict[str, Any]) -> str:
    rate = f"{node['rate']:.1f}" if node["live"] else "-"
    leases = str(node["leases"]) if node["live"] else "-"
    return (
        f"  {node['id']:<28} {node['state']:<9} {node['fetched']:>9} {rate:>8} {leases:>7}"
        f" {node['seen_s_ago']:>7.1f}s  {node['host']}:{node['out']}"
    )


def print_status(report: dict[str, Any], *, as_json: bool) -> None:
    counters = report.pop("_counters")
    if as_json:
        print(json.dumps(report, indent=1, sort_keys=True, default=str))
        return
    meta = {"shards": report["meta"].get("shards"), "redis_used_memory": report["redis_used_memory"]}
    print(format_stats(counters, meta))
    progress = report["progress"]
    fraction, eta = progress["fraction"], progress["eta_s"]
    success = progress["success_rate"]
    print("progress")
    done = "-" if fraction is None else f"{fraction:.1%}"
    print(f"  done: {done} (of the frontier's size, which grows as links are found)")
    print(f"  eta: {'-' if eta is None else format_duration(eta)} at {report['rates']['pages_s']:.1f} pages/s")
    if progress.get("waiting"):
        print(f"  {progress['waiting']}")
    print(f"  success-rate: {'-' if success is None else f'{success:.1%}'}")
    print(f"  downloaded: {format_bytes(progress['bytes_downloaded'])} (response bodies as received, all nodes)")
    print(f"  written: {format_bytes(progress['bytes_written'])} (output files of all nodes)")
    for alert in report["alerts"]:
        print(f"alert: {alert['node']}: {alert['name']}")
    print(f"nodes: {report['live_nodes']} live, {len(report['nodes'])} seen today")
    if report["nodes"]:
        print(f"  {'id':<28} {'state':<9} {'fetched':>9} {'pages/s':>8} {'leases':>7} {'seen':>8}  host:out")
        for node in report["nodes"]:
            print(_node_line(node))
    print(f"redis memory: {format_bytes(report['redis_used_memory'])}")


def stop(cfg: CrawlConfig, node_id: str = "") -> int:
    """Raise the stop generation: every node running now (or the one ``node_id``) drains (finishes its in-flight
    pages) and exits 0."""
    client = _client(cfg, writes=True)
    try:
        settings = FrontierSettings.from_config(cfg)
        RedisFrontier.open(client, settings, create=False)  # a clear error if there is no crawl here
        live = [n.node_id for n in list_nodes(client, settings.prefix) if n.live]
        if node_id and node_id not in live:
            raise InputError(f"--node {node_id}: no such node is running (running: {', '.join(live) or 'none'})")
        request_stop(client, settings.prefix, node_id)
    finally:
        client.close()
    names = node_id or ", ".join(live) or "none running"
    print(f"asked {1 if node_id else len(live)} node(s) to drain and exit: {names}")
    return 0


__all__ = ["NodeStatus", "print_seed_result", "print_status", "seed", "status", "stop"]
