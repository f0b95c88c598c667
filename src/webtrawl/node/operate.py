"""What a node does each tick for the people operating it: progress and ETA, alerts, the dashboard's document.

The supervisor already reads the crawl's counters once a tick (``_snapshot``); this module adds only what the
dashboard needs beyond that, at most once every few seconds (the host sample, the node list) and only while the
dashboard is on. Viewers never cause a Redis read: :class:`~webtrawl.metrics.dashboard.Dashboard` serves the
document published here.

:func:`status_document` is the one shape of that document, for a node's dashboard and for ``trawl status --serve``
(and the keys ``trawl status --json`` shares with it).
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from webtrawl.config import CrawlConfig, CrawlOptions, OperationsOptions, to_saved
from webtrawl.frontier.base import Counters
from webtrawl.frontier.bloom import grown_note
from webtrawl.frontier.connect import SyncClient, mask_url
from webtrawl.metrics.alerts import Alerts, AlertSettings, Sample
from webtrawl.metrics.downloaded import DownloadedBytes
from webtrawl.metrics.history import History
from webtrawl.metrics.procs import output_bytes
from webtrawl.metrics.progress import Progress, compute, errors_total
from webtrawl.metrics.rates import RateWindow, Snapshot
from webtrawl.metrics.report import DROP_PREFIX, ERR_PREFIX, reasons
from webtrawl.node.hosts import sample_hosts
from webtrawl.node.presence import list_nodes
from webtrawl.values import parse_headers

if TYPE_CHECKING:
    from webtrawl.metrics.dashboard import Dashboard

log = logging.getLogger("webtrawl.node")

_SLOW_EVERY_S = 5.0  # host sample, node list, output size
# secrets (a hook's command holds a webhook's token), and nothing a viewer needs
_HIDDEN_SETTINGS = frozenset(("ui_token", "alert_cmd", "on_change", "seeds_file"))
_GIVEN_URLS = ("redis", "proxy", "items_to", "records_to", "chunks_to", "changes_to")  # shown without passwords
WATCHED = ("supervisor", "fetcher", "parser")


def alert_settings(opts: OperationsOptions) -> AlertSettings:
    memory = opts.alert_memory or (int(opts.max_memory * 0.9) if opts.max_memory else 0)
    return AlertSettings(
        error_rate=opts.alert_error_rate,
        window_s=opts.alert_window,
        min_urls=opts.alert_min_urls,
        stall_s=opts.alert_stall,
        memory=memory,
        disk_free=opts.alert_disk_free,
        redis_memory=opts.alert_redis_memory,
        cmd=opts.alert_cmd,
    )


def shown_settings(cfg: CrawlConfig) -> dict[str, Any]:
    """The settings as the dashboard shows them (to whoever reaches its port): no password, token or header value
    (an Authorization, a Cookie, an API key), only the names of the headers sent."""
    saved = {k: v for k, v in to_saved(cfg).items() if k not in _HIDDEN_SETTINGS}
    for name in _GIVEN_URLS:
        value = saved.get(name)
        if isinstance(value, list):
            saved[name] = [mask_url(url) for url in value]
        elif value:
            saved[name] = mask_url(value)
    saved["header"] = [f"{name}: ***" for name, _ in parse_headers(saved.get("header") or [])]
    return saved


def least_free(out: Path) -> tuple[int, str] | None:
    """Free bytes on the fullest volume the output goes to, and where: ``out`` and each directory in it (one of
    them may be a volume of its own, as ``warc/`` on a big disk); None if none can be read."""
    found: tuple[int, str] | None = None
    with contextlib.suppress(OSError):
        for path in [out, *(p for p in out.iterdir() if p.is_dir())]:
            with contextlib.suppress(OSError):
                free = shutil.disk_usage(path).free
                if found is None or free < found[0]:
                    found = (free, str(path))
    return found


def status_document(
    counters: Counters,
    *,
    scope: str,
    rates: dict[str, float],
    progress: Progress,
    redis_used_memory: int,
    **rest: Any,
) -> dict[str, Any]:
    """The dashboard's JSON: the counters and everything derived from them; ``rest`` adds node, state, elapsed,
    processes, nodes, hosts, settings, alerts, history."""
    doc: dict[str, Any] = {
        "at": time.time(),
        "scope": scope,
        "counters": counters.values,
        "queued": counters.queued,
        "inflight": counters.inflight,
        "ready_hosts": counters.ready_hosts,
        "waiting_hosts": counters.waiting_hosts,
        "errors": reasons(counters, ERR_PREFIX),
        "dropped": reasons(counters, DROP_PREFIX),
        "rates": rates,
        "progress": progress.as_dict(),
        "redis_used_memory": redis_used_memory,
    }
    doc.update(rest)
    return doc


def _error_counters(counters: Counters) -> Counters:
    return Counters(values={"fetched": counters.get("fetched"), "errors": errors_total(counters)})


class Operations:
    """Per-tick work of a node for its operators; :meth:`observe` before the display, :meth:`publish` after."""

    def __init__(
        self,
        opts: OperationsOptions,
        crawl: CrawlOptions,
        settings: dict[str, Any],
        out: Path,
        client: SyncClient,
        prefix: str,
    ) -> None:
        """``settings``: the crawl's options as the dashboard shows them (:func:`shown_settings`)."""
        self.crawl = crawl
        self.settings = settings
        self.out = out
        self.client = client
        self.prefix = prefix
        self.alerts = Alerts(alert_settings(opts), node=crawl.node_id)
        self.history = History()
        self._err_rates = RateWindow(60.0)
        self.dashboard: Dashboard | None = None
        if opts.ui_port:
            from webtrawl.metrics.dashboard import Dashboard  # aiohttp's server: loaded only when it is on

            self.dashboard = Dashboard(opts.ui_port, opts.ui_bind, opts.ui_token, title=f"webtrawl {crawl.node_id}")
        self._filters = 1  # the seen filter's longest chain, as last told
        self._disk: tuple[int, str] | None = None  # least_free(), every few seconds
        self._slow_at = float("-inf")
        self._hosts: dict[str, list[dict[str, Any]]] = {"slowest": [], "failing": []}
        self._nodes: list[dict[str, Any]] = []
        self.bytes_written = 0
        self._downloaded = DownloadedBytes(out / "records")
        self.bytes_downloaded = 0
        self.progress: Progress | None = None

    def start(self) -> None:
        if self.dashboard is not None:
            self.dashboard.start()

    def stop(self) -> None:
        if self.dashboard is not None:
            self.dashboard.stop()
        self.alerts.close()

    def _slow_reads(self, now: float) -> None:
        if now - self._slow_at < _SLOW_EVERY_S:
            return
        self._slow_at = now
        self.bytes_written = output_bytes(self.out)
        self._disk = least_free(self.out)
        self.bytes_downloaded = self._downloaded.update()
        if self.dashboard is None:
            return
        try:
            self._hosts = sample_hosts(self.client, self.prefix)
            if self.crawl.redis:
                now_ms = int(time.time() * 1000)
                self._nodes = [n.as_dict(now_ms) for n in list_nodes(self.client, self.prefix)]
        except redis.RedisError as exc:
            log.debug("dashboard: host sample failed: %s", exc)

    def observe(
        self,
        snapshot: Snapshot,
        rates: RateWindow,
        elapsed: float,
        *,
        pages_done: int | None = None,
        final: bool = False,
    ) -> Progress:
        """Progress for the display and the log line, and the alerts (logged and hooked here). ``final``: the last
        call of the run, which reads what is otherwise read every few seconds."""
        if final:
            self._slow_at = float("-inf")
        self._slow_reads(snapshot.at)
        c = snapshot.counters
        self._seen_filter(c)
        self._err_rates.add(Snapshot(at=snapshot.at, counters=_error_counters(c)))
        self.history.add(c, at=snapshot.at)
        progress = compute(
            c,
            rates.rate("fetched"),
            elapsed_s=elapsed,
            max_pages=self.crawl.max_pages,
            max_time=self.crawl.max_time,
            bytes_written=self.bytes_written,
            pages_done=pages_done,
            bytes_downloaded=self.bytes_downloaded,
        )
        snapshot.progress = progress
        self.progress = progress
        self.alerts.evaluate(
            Sample(
                at=snapshot.at,
                stored=c.get("stored"),
                errors=errors_total(c),
                fetched=c.get("fetched"),
                pending=c.queued + c.inflight,
                rss=sum(snapshot.rss_by_kind.get(kind, 0) for kind in WATCHED),
                disk_free=self._disk[0] if self._disk else None,
                disk_dir=self._disk[1] if self._disk else "",
                redis_used=snapshot.redis_used_memory,
                redis_max=snapshot.redis_max_memory,
                waiting=progress.waiting,
            )
        )
        return progress

    def _seen_filter(self, c: Counters) -> None:
        """One line each time the seen filter's chains grow: it costs a Redis read per new URL and filter."""
        if c.bloom_filters <= self._filters:
            return
        self._filters = c.bloom_filters
        log.info("%s", grown_note(self._filters))

    def _node_rows(self, snapshot: Snapshot, own: dict[str, Any]) -> list[dict[str, Any]]:
        """The node list from Redis (every few seconds), with this node's own row as of now."""
        state = snapshot.extra.get("state", "")
        row = {
            "id": self.crawl.node_id,
            "state": state,
            "live": state != "stopped",
            "seen_s_ago": 0.0,
            "host": socket.gethostname(),
            "out": str(self.out),
            **{k: own.get(k, 0) for k in ("fetched", "rate", "leases", "fetchers", "parsers", "rss", "cpu")},
            "written": self.bytes_written,
            "downloaded": self.bytes_downloaded,
            "alerts": sorted(self.alerts.active),
        }
        if not self.crawl.redis:  # a crawl of its own: the counters are this node's
            row["fetched"] = snapshot.counters.get("fetched")
        others = [n for n in self._nodes if n["id"] != self.crawl.node_id]
        return sorted([row, *others], key=lambda n: (not n["live"], n["id"]))

    def publish(self, snapshot: Snapshot, rates: RateWindow, own: dict[str, Any] | None = None) -> None:
        if self.dashboard is None or snapshot.progress is None:
            return
        extra = snapshot.extra
        doc = status_document(
            snapshot.counters,
            scope="node",
            rates={"pages_s": rates.rate("fetched"), "errors_s": self._err_rates.rate("errors")},
            progress=snapshot.progress,
            redis_used_memory=snapshot.redis_used_memory,
            node=extra.get("node", ""),
            state=extra.get("state", ""),
            elapsed=extra.get("elapsed", 0.0),
            processes=snapshot.processes,
            nodes=self._node_rows(snapshot, own or {}),
            hosts=self._hosts,
            settings=self.settings,
            alerts={
                "active": [{**a.as_dict(), "node": self.crawl.node_id} for a in self.alerts.active.values()],
                "recent": [a.as_dict() for a in self.alerts.history],
            },
            bloom={"false_positive_rate": snapshot.counters.bloom_false_positive_rate()},
            history=self.history.as_dict(),
        )
        self.dashboard.publish(doc)

    def report_proxies(self, down: int, fetchers: int) -> None:
        """The ``proxy`` alert: ``down`` fetchers have no live --proxy (fetch/proxies.py)."""
        message = f"no live proxy in {down} of {fetchers} fetchers: their requests fail with 'proxy'"
        self.alerts.report("proxy", down > 0, down, 0, message if down else "a proxy answers again")

    def heartbeat_fields(self) -> dict[str, int | float | str]:
        """What the node adds to its heartbeat for ``trawl status``: output size, progress, alerts."""
        alerts = ",".join(sorted(self.alerts.active))
        return {"written": self.bytes_written, "downloaded": self.bytes_downloaded, "alerts": alerts}
