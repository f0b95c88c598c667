"""Prometheus exporter: the newest snapshot, served over HTTP for scraping.

A custom collector turns the snapshot into metric families at scrape time, so counters that appear later
in the crawl (a new error reason, a new stage's counter) are exported without declaring them first. Each
exporter has its own registry: several can live in one process (tests, several nodes) without clashing.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily, Metric

from webtrawl.errors import InputError
from webtrawl.metrics.rates import Snapshot
from webtrawl.metrics.report import DROP_PREFIX, ERR_PREFIX, GAUGES

PREFIX = "webtrawl_"
# Totals that only grow: exported as counters (``_total``) so rate() works; everything unknown is a gauge.
_MONOTONIC = frozenset(("fetched", "pages", "stored", "added", "seen", "reclaimed"))
_INVALID = re.compile(r"[^a-zA-Z0-9_]")
# Families this module names itself; a counter that sanitizes to one of them is skipped rather than clash.
_FIXED = frozenset(
    PREFIX + name
    for name in (
        "errors", "dropped", "hosts_ready", "hosts_waiting", "hosts_backoff", "hosts_robots_retry", "bloom_bits",
        "bloom_false_positive_rate",
        "memory_rss_bytes", "redis_used_memory_bytes", "elapsed_seconds", "node",
    )
)  # fmt: skip


def metric_name(name: str) -> str:
    """``hosts-parked`` -> ``webtrawl_hosts_parked`` (Prometheus names allow only ``[a-zA-Z0-9_:]``)."""
    return PREFIX + _INVALID.sub("_", name).strip("_").lower()


class _SnapshotCollector:
    def __init__(self) -> None:
        # replaced whole by update(), never mutated: a scrape always sees one consistent snapshot
        self.snapshot: Snapshot | None = None

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        if snap is None:
            return
        c = snap.counters
        errors = CounterMetricFamily(PREFIX + "errors", "URLs that failed, by reason", labels=["reason"])
        drops = CounterMetricFamily(PREFIX + "dropped", "URLs not admitted or given up, by reason", labels=["reason"])
        emitted = set(_FIXED)
        for key, value in sorted(c.values.items()):
            if key.startswith(ERR_PREFIX):
                errors.add_metric([key[len(ERR_PREFIX) :]], value)
                continue
            if key.startswith(DROP_PREFIX):
                drops.add_metric([key[len(DROP_PREFIX) :]], value)
                continue
            name = metric_name(key)
            if name in emitted:
                continue
            emitted.add(name)
            if key in _MONOTONIC:
                yield CounterMetricFamily(name, f"crawl total of {key!r}", value=value)
            else:
                yield GaugeMetricFamily(name, f"current value of {key!r}", value=value)
        yield errors
        yield drops
        for key in GAUGES:  # present even before the first URL is queued
            if metric_name(key) not in emitted:
                yield GaugeMetricFamily(metric_name(key), f"current value of {key!r}", value=c.get(key))

        yield GaugeMetricFamily(PREFIX + "hosts_ready", "hosts whose next request is due", value=c.ready_hosts)
        yield GaugeMetricFamily(PREFIX + "hosts_waiting", "hosts waiting for politeness", value=c.waiting_hosts)
        yield GaugeMetricFamily(
            PREFIX + "hosts_backoff", "waiting hosts in back-off after failures", value=c.backoff_hosts
        )
        yield GaugeMetricFamily(
            PREFIX + "hosts_robots_retry", "waiting hosts whose robots.txt is retried", value=c.robots_hosts
        )
        yield GaugeMetricFamily(PREFIX + "bloom_bits", "size of the seen-URL Bloom filter", value=c.bloom_bits)
        yield GaugeMetricFamily(
            PREFIX + "bloom_false_positive_rate",
            "current false-positive probability of the seen-URL filter",
            value=c.bloom_false_positive_rate(),
        )
        rss = GaugeMetricFamily(PREFIX + "memory_rss_bytes", "resident memory by process kind", labels=["kind"])
        for kind, value in sorted(snap.rss_by_kind.items()):
            rss.add_metric([kind], value)
        yield rss
        yield GaugeMetricFamily(
            PREFIX + "redis_used_memory_bytes", "Redis INFO used_memory", value=snap.redis_used_memory
        )
        yield from self._extra(snap)

    @staticmethod
    def _extra(snap: Snapshot) -> Iterator[Metric]:
        labels: dict[str, str] = {}
        for key, value in sorted(snap.extra.items()):
            if key == "elapsed":
                yield GaugeMetricFamily(PREFIX + "elapsed_seconds", "seconds since this run started", value=value)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                yield GaugeMetricFamily(metric_name("extra_" + key), f"{key} of this node", value=value)
            else:
                labels[_INVALID.sub("_", key)] = str(value)
        if labels:
            info = InfoMetricFamily(PREFIX + "node", "this node (id, state)")
            info.add_metric([], labels)
            yield info


class MetricsExporter:
    """Serves the newest :class:`Snapshot` on ``http://host:port/metrics`` from a daemon thread."""

    def __init__(self, port: int, host: str = "0.0.0.0") -> None:
        self.host = host
        self.requested_port = port
        self.registry = CollectorRegistry()
        self._collector = _SnapshotCollector()
        self.registry.register(self._collector)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port actually bound (differs from the requested one when that was 0)."""
        if self._server is None:
            return self.requested_port
        return int(self._server.server_address[1])

    def start(self) -> None:
        if self._server is None:
            try:
                self._server, self._thread = start_http_server(self.requested_port, self.host, self.registry)
            except OSError as exc:  # the port in use, or not ours to take
                raise InputError(f"cannot serve Prometheus metrics on port {self.requested_port}: {exc}") from None

    def update(self, snapshot: Snapshot) -> None:
        self._collector.snapshot = snapshot

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> MetricsExporter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
