"""Percent done and ETA from counters: by --max-pages, by --max-time, by the frontier's size."""

from __future__ import annotations

import pytest

from webtrawl.frontier.base import Counters
from webtrawl.metrics.progress import compute, success_rate


def _c(**values: int) -> Counters:
    return Counters(values=values)


def test_max_pages_progress_and_eta() -> None:
    p = compute(_c(fetched=25, added=100, queued=50), 5.0, max_pages=100)
    assert (p.basis, p.fraction, p.eta_s, p.done, p.total) == ("max-pages", 0.25, 15.0, 25, 100)
    assert p.percent_text == "25.0%" and p.eta_text == "15s"
    assert compute(_c(fetched=25), 0.0, max_pages=100).eta_s is None  # no rate, no ETA
    assert compute(_c(fetched=25), 1.0, max_pages=100, pages_done=40).fraction == 0.4
    assert compute(_c(fetched=120), 1.0, max_pages=100).fraction == 1.0


def test_the_limit_reached_first_wins() -> None:
    p = compute(_c(fetched=10), 1.0, max_pages=1000, max_time=60, elapsed_s=30)
    assert (p.basis, p.fraction, p.eta_s) == ("max-time", 0.5, 30.0)
    p = compute(_c(fetched=990), 1.0, max_pages=1000, max_time=60, elapsed_s=30)
    assert (p.basis, p.eta_s) == ("max-pages", 10.0)


def test_frontier_progress_without_limits() -> None:
    p = compute(_c(fetched=30, added=100, queued=60, inflight=10), 7.0)
    assert p.basis == "frontier" and p.fraction == 0.3 and p.eta_s == pytest.approx(10.0)
    assert compute(_c(), 0.0).fraction is None  # nothing added yet: nothing known


def test_success_rate_counts_failed_urls_against_ended_ones() -> None:
    assert success_rate(_c(stored=200, **{"err:timeout": 10, "err:dns": 10, "drop:scope": 99})) == 0.9
    assert success_rate(_c()) is None
