from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.metrics.samples import MIB, snapshot
from webtrawl.metrics import MetricsExporter

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy: 127.0.0.1 only


def scrape(exporter: MetricsExporter) -> str:
    with _OPENER.open(f"http://127.0.0.1:{exporter.port}/metrics", timeout=10) as response:
        assert response.status == 200
        body: bytes = response.read()
    return body.decode()


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.fixture
def exporter() -> Iterator[MetricsExporter]:
    exp = MetricsExporter(0, host="127.0.0.1")
    exp.start()
    yield exp
    exp.stop()


def test_scrape_shows_counters_gauges_and_labels(exporter: MetricsExporter) -> None:
    exporter.update(snapshot(5.0))
    text = scrape(exporter)
    assert 'webtrawl_errors_total{reason="timeout"} 3.0' in text.splitlines()
    # running totals are counters (rate() works on them); sizes that go up and down are gauges
    assert "# TYPE webtrawl_fetched_total counter" in text.splitlines()
    assert "# TYPE webtrawl_queued gauge" in text.splitlines()
    got = samples(text)
    assert got[("webtrawl_fetched_total", ())] == 1234
    assert got[("webtrawl_errors_total", (("reason", "http-5xx"),))] == 7
    assert got[("webtrawl_dropped_total", (("reason", "host-queue-cap"),))] == 10
    assert got[("webtrawl_queued", ())] == 50
    assert got[("webtrawl_inflight", ())] == 3
    assert got[("webtrawl_hosts_parked", ())] == 2
    assert got[("webtrawl_custom_thing", ())] == 5
    assert got[("webtrawl_hosts_ready", ())] == 4
    assert got[("webtrawl_hosts_waiting", ())] == 9
    assert (got[("webtrawl_hosts_backoff", ())], got[("webtrawl_hosts_robots_retry", ())]) == (2, 1)  # of the 9
    assert got[("webtrawl_memory_rss_bytes", (("kind", "fetcher"),))] == 300 * MIB
    assert got[("webtrawl_redis_used_memory_bytes", ())] == 5_000_000
    assert got[("webtrawl_elapsed_seconds", ())] == 3723.0
    assert got[("webtrawl_node_info", (("node", "n1"), ("state", "crawling")))] == 1
    assert got[("webtrawl_bloom_false_positive_rate", ())] == pytest.approx(0.0081937, rel=1e-4)


def test_scrape_follows_updates_and_new_reasons(exporter: MetricsExporter) -> None:
    exporter.update(snapshot(5.0))
    exporter.update(snapshot(6.0, fetched=2000, **{"err:tls": 1}))
    got = samples(scrape(exporter))
    assert got[("webtrawl_fetched_total", ())] == 2000
    assert got[("webtrawl_errors_total", (("reason", "tls"),))] == 1


def test_no_crawl_metrics_before_the_first_snapshot(exporter: MetricsExporter) -> None:
    assert "webtrawl_" not in scrape(exporter)


def test_exporters_have_their_own_registries(exporter: MetricsExporter) -> None:
    with MetricsExporter(0, host="127.0.0.1") as other:
        exporter.update(snapshot(1.0, fetched=1))
        other.update(snapshot(1.0, fetched=2))
        assert other.port != exporter.port
        assert samples(scrape(exporter))[("webtrawl_fetched_total", ())] == 1
        assert samples(scrape(other))[("webtrawl_fetched_total", ())] == 2


def test_stop_closes_the_port() -> None:
    exp = MetricsExporter(0, host="127.0.0.1")
    exp.start()
    port = exp.port
    exp.stop()
    exp.stop()  # idempotent
    with pytest.raises(urllib.error.URLError):
        _OPENER.open(f"http://127.0.0.1:{port}/metrics", timeout=10)
