"""``trawl status --host NAME`` (one host's state and why it waits) and ``trawl status --serve PORT`` (the whole
crawl's dashboard, from any machine that reaches the Redis: it reads what ``trawl status`` reads, once a second)."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from types import FrameType
from typing import Any

import redis

from webtrawl.config import CrawlConfig
from webtrawl.frontier import FrontierSettings
from webtrawl.frontier.base import Counters
from webtrawl.frontier.retry import is_transient
from webtrawl.metrics.dashboard import Dashboard
from webtrawl.metrics.history import History
from webtrawl.metrics.progress import Progress
from webtrawl.metrics.rates import RateWindow, Snapshot
from webtrawl.node.hosts import format_host_report, host_report, sample_hosts
from webtrawl.node.operate import status_document
from webtrawl.node.shared import _client, status

log = logging.getLogger("webtrawl.node")

_POLL_S = 1.0
_HOSTS_EVERY_S = 5.0


def print_host(cfg: CrawlConfig, host: str, *, as_json: bool) -> int:
    client = _client(cfg)
    try:
        doc = host_report(client, FrontierSettings.from_config(cfg).prefix, host, cfg.politeness.park_after)
    finally:
        client.close()
    print(
        json.dumps(doc, indent=1, sort_keys=True) if as_json else format_host_report(doc), end="\n" if as_json else ""
    )
    return 0


def _document(report: dict[str, Any], history: History, errors: RateWindow, hosts: dict[str, Any]) -> dict[str, Any]:
    counters: Counters = report["_counters"]
    at = time.monotonic()
    history.add(counters, at=at)
    errors.add(Snapshot(at=at, counters=Counters(values={"errors": sum(n for _, n in report["errors"])})))
    p = report["progress"]
    nodes = report["nodes"]
    live = [n for n in nodes if n["live"]]
    processes = {
        "nodes": {
            "rss": float(sum(n["rss"] for n in live)),
            "cpu": sum(n["cpu"] for n in live),
            "count": float(len(live)),
        }
    }
    settings = {k: v for k, v in report["meta"].items()}
    return status_document(
        counters,
        scope="cluster",
        rates={"pages_s": report["rates"]["pages_s"], "errors_s": errors.rate("errors")},
        progress=Progress(**p),
        redis_used_memory=report["redis_used_memory"],
        state="finished" if report["finished"] else f"{report['live_nodes']} live nodes",
        elapsed=None,
        processes=processes,
        nodes=nodes,
        hosts=hosts,
        settings=settings,
        alerts={"active": [{**a, "message": "see the node's log"} for a in report["alerts"]], "recent": []},
        history=history.as_dict(),
    )


def _unreadable(shown: dict[str, Any], since: str, exc: Exception) -> dict[str, Any]:
    """The last figures, marked as old: a page that only stopped changing would tell whoever watches that the crawl
    stalled, when it is its Redis (a restart, a failover, a partition) that this dashboard cannot reach."""
    alerts = dict(shown.get("alerts") or {})
    message = f"cannot read the crawl since {since} ({' '.join(str(exc).split())}): the figures are from then"
    alerts["active"] = [{"name": "redis", "message": message}, *(alerts.get("active") or [])]
    return {**shown, "alerts": alerts, "state": "Redis out of reach"}


def serve_status(cfg: CrawlConfig, port: int) -> int:
    """Poll the crawl once a second and serve its dashboard until Ctrl-C or SIGTERM."""
    client = _client(cfg)
    prefix = FrontierSettings.from_config(cfg).prefix
    status(cfg, client)  # a clear error now if there is no crawl in this Redis
    dashboard = Dashboard(port, cfg.operations.ui_bind, cfg.operations.ui_token, title="webtrawl crawl").start()
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    old_term = signal.signal(signal.SIGTERM, on_signal)
    history, errors = History(), RateWindow(60.0)
    hosts: dict[str, Any] = {"slowest": [], "failing": []}
    hosts_at = float("-inf")
    shown: dict[str, Any] = {}
    away_since = ""
    print(f"dashboard on {dashboard.url} (Ctrl-C to stop)", flush=True)
    try:
        while not stop.is_set():
            try:
                if time.monotonic() - hosts_at >= _HOSTS_EVERY_S:
                    hosts_at = time.monotonic()
                    hosts = sample_hosts(client, prefix)
                shown = _document(status(cfg, client), history, errors, hosts)
                dashboard.publish(shown)
                if away_since:
                    log.info("the crawl can be read again")
                    away_since = ""
            except Exception as exc:
                if not isinstance(exc, redis.RedisError) and not is_transient(exc):
                    raise
                if not away_since:
                    away_since = time.strftime("%H:%M:%S")
                    log.warning("cannot read the crawl: %s", exc)
                dashboard.publish(_unreadable(shown, away_since, exc))
            stop.wait(_POLL_S)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, old_term)
        dashboard.stop()
        client.close()
    return 0
