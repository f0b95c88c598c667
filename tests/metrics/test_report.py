from __future__ import annotations

import re

from tests.metrics.samples import crawl_counters
from webtrawl.frontier.base import Counters
from webtrawl.metrics import format_stats
from webtrawl.metrics.report import expected_false_positives


def section(text: str, title: str) -> list[str]:
    """The header line of ``title`` and the indented lines under it."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line == title or line.startswith(title + ":"))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
    return lines[start:end]


def test_errors_and_drops_sorted_by_count_with_totals() -> None:
    text = format_stats(crawl_counters())
    assert section(text, "errors") == [
        "errors: 15",
        "  http-5xx: 7",
        "  robots: 4",
        "  timeout: 3",
        "  dns: 1",
    ]
    # zero counters (drop:scope) are not listed
    assert section(text, "dropped") == ["dropped: 12", "  host-queue-cap: 10", "  budget: 2"]


def test_totals_frontier_and_unknown_counters() -> None:
    text = format_stats(crawl_counters())
    totals = section(text, "totals")
    for line in (
        "  fetched: 1234",
        "  pages: 1200",
        "  stored: 1100",
        "  hosts-parked: 2",
        "  custom-thing: 5",
    ):
        assert line in totals
    assert section(text, "frontier") == [
        "frontier",
        "  queued: 50",
        "  inflight: 3",
        "  hosts-ready: 4",
        "  hosts-waiting: 9",
    ]


def test_bloom_filter_size_and_false_positive_rate() -> None:
    # n=2000 added, m=20000 bits, k=7: (1 - e^-0.7)^7 = 0.0081937
    text = format_stats(crawl_counters(), {"bloom_error": 0.0001})
    assert section(text, "seen-filter") == [
        "seen-filter",
        "  bits: 20000",
        "  hashes: 7",
        "  filters: 1",
        "  size: 2.4KiB",
        "  false-positive-rate: 0.819%",
        "  false-positive-target: 0.0100%",
        "  expected-false-positives: 3",
    ]


def test_expected_false_positives_follow_the_fill_of_the_filter() -> None:
    # the integral of (1 - e^(-k x / m))^k over the URLs added; n=2000, m=20000, k=7: 2.686 (midpoint, 200k steps)
    counters = crawl_counters()
    assert abs(expected_false_positives(counters) - 2.686) < 0.01
    assert expected_false_positives(Counters()) == 0.0
    fuller = crawl_counters(added=20_000)
    assert expected_false_positives(fuller) > 100 * expected_false_positives(counters)


def test_redis_memory_per_queued_url_and_other_meta() -> None:
    meta = {"redis_used_memory": 5_000_000, "node": "n1", "elapsed": 3723.0}
    text = format_stats(crawl_counters(queued=5000), meta)
    assert section(text, "crawl") == ["crawl", "  node: n1", "  elapsed: 1h02m03s"]
    assert section(text, "redis") == ["redis", "  used-memory: 4.8MiB", "  bytes-per-queued-url: 1000"]


def test_bytes_per_queued_url_is_not_shown_for_a_small_frontier() -> None:
    text = format_stats(crawl_counters(queued=50), {"redis_used_memory": 5_000_000})
    assert section(text, "redis")[-1] == "  bytes-per-queued-url: n/a (fewer than 1000 queued)"


def test_every_line_is_a_title_or_name_value() -> None:
    text = format_stats(crawl_counters(), {"bloom_error": 0.0001, "redis_used_memory": 1, "out": "/tmp/x"})
    for line in text.splitlines():
        assert re.fullmatch(r"[a-z-]+(: \d+)?|  [a-z0-9-]+: \S.*", line), line


def test_empty_crawl_is_reported_without_sections_missing() -> None:
    text = format_stats(Counters())
    assert "errors: 0" in text.splitlines()
    assert "dropped: 0" in text.splitlines()
    assert "  false-positive-rate: 0%" in text.splitlines()
    assert "redis" not in text.splitlines()  # no Redis figures given, no made-up ones
    assert format_stats(Counters()) == text  # stable


def test_figures_read_back_from_redis_as_text() -> None:
    """``trawl stats`` passes the crawl's meta hash as stored: numbers arrive as strings or bytes."""
    meta = {"bloom_error": b"0.001", "redis_used_memory": 1000, "bytes_per_queued_url": 20.0, "shards": b"64"}
    text = format_stats(crawl_counters(), meta)
    assert "  false-positive-target: 0.100%" in text.splitlines()
    assert "  shards: 64" in section(text, "crawl")
    assert section(text, "redis") == ["redis", "  used-memory: 1000B", "  bytes-per-queued-url: 20"]


def test_a_single_blocked_filter_is_counted_by_its_own_rates() -> None:
    # a crawl whose only filter is blocked (bloom.py): the classic formula over bits and hashes would undercount its
    # uneven blocks; the rate and the expected count both follow the blocked filter's own load
    from webtrawl.frontier.bloom import blocked_chain, chain_expected_false_positives, chain_false_positive_rate

    (level,) = blocked_chain(10_000, 1e-4, 1)[:1]
    counters = Counters(
        bloom_bits=level.bits, bloom_hashes=level.hashes, bloom_chain=[tuple(level)], bloom_fill=[(0, 8_000)]
    )
    counters.values = {"added": 8_000}
    assert counters.bloom_false_positive_rate() == chain_false_positive_rate([level], 0, 8_000)
    assert expected_false_positives(counters) == chain_expected_false_positives([level], 0, 8_000)
    classic = Counters(bloom_bits=level.bits, bloom_hashes=level.hashes, bloom_chain=[tuple(level)[:3]])
    classic.values = {"added": 8_000}
    assert expected_false_positives(counters) > expected_false_positives(classic)
