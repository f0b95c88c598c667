"""Metrics stage: rates over a sliding window, live progress, ``trawl stats`` text, a Prometheus exporter."""

from webtrawl.metrics.display import ProgressDisplay
from webtrawl.metrics.prometheus import MetricsExporter
from webtrawl.metrics.rates import RateWindow, Snapshot, process_memory
from webtrawl.metrics.report import format_stats

__all__ = ["MetricsExporter", "ProgressDisplay", "RateWindow", "Snapshot", "format_stats", "process_memory"]
