from __future__ import annotations

import os
import subprocess
import sys

import pytest

from webtrawl.frontier.base import Counters
from webtrawl.metrics import RateWindow, Snapshot, process_memory


def snap(at: float, **values: int) -> Snapshot:
    return Snapshot(at=at, counters=Counters(values=dict(values)))


def test_rate_between_two_snapshots() -> None:
    window = RateWindow(60.0)
    window.add(snap(100.0, fetched=100))
    window.add(snap(110.0, fetched=600))
    assert window.rate("fetched") == pytest.approx(50.0)
    assert window.span_s == pytest.approx(10.0)


def test_no_rate_before_two_samples_or_for_unknown_counter() -> None:
    window = RateWindow(60.0)
    assert window.rate("fetched") == 0.0
    window.add(snap(5.0, fetched=10))
    assert window.rate("fetched") == 0.0
    window.add(snap(6.0, fetched=20))
    assert window.rate("never-counted") == 0.0


def test_counter_appearing_mid_window_counts_from_zero() -> None:
    window = RateWindow(60.0)
    window.add(snap(0.0, fetched=0))
    window.add(snap(4.0, fetched=0, **{"err:timeout": 8}))
    assert window.rate("err:timeout") == pytest.approx(2.0)


def test_old_samples_leave_the_window() -> None:
    window = RateWindow(60.0)
    window.add(snap(0.0, fetched=0))
    window.add(snap(30.0, fetched=300))  # 10/s so far
    window.add(snap(60.0, fetched=1500))
    window.add(snap(90.0, fetched=2700))  # 40/s over the last minute; t=0 is out of it
    assert window.rate("fetched") == pytest.approx((2700 - 300) / 60.0)
    assert window.span_s == pytest.approx(60.0)


def test_sparse_samples_still_give_a_rate() -> None:
    window = RateWindow(60.0)
    window.add(snap(0.0, fetched=0))
    window.add(snap(300.0, fetched=600))
    assert window.rate("fetched") == pytest.approx(2.0)


def test_shrinking_gauge_has_negative_rate() -> None:
    window = RateWindow(60.0)
    window.add(snap(0.0, queued=1000))
    window.add(snap(20.0, queued=600))
    assert window.rate("queued") == pytest.approx(-20.0)


def test_memory_stays_bounded_under_fast_polling() -> None:
    window = RateWindow(60.0, max_samples=120)
    for i in range(20_000):  # 200 s of samples every 10 ms, 25 pages/s
        window.add(snap(i / 100.0, fetched=i // 4))
    assert len(window) <= 122
    assert window.span_s == pytest.approx(60.0, abs=1.0)
    assert window.rate("fetched") == pytest.approx(25.0, rel=0.01)


def test_clock_going_back_starts_over() -> None:
    window = RateWindow(60.0)
    window.add(snap(1000.0, fetched=5000))
    window.add(snap(1010.0, fetched=5100))
    window.add(snap(3.0, fetched=0))  # a restarted process's monotonic clock
    assert window.rate("fetched") == 0.0
    window.add(snap(13.0, fetched=70))
    assert window.rate("fetched") == pytest.approx(7.0)


def test_bad_window_is_refused() -> None:
    with pytest.raises(ValueError):
        RateWindow(0.0)


def test_process_memory_of_this_process() -> None:
    memory = process_memory({"supervisor": [os.getpid()], "parser": []})
    assert memory["supervisor"] > 1024 * 1024  # a Python interpreter holds more than 1 MiB resident
    assert memory["parser"] == 0


def test_process_memory_of_a_dead_process_is_zero() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: the pid no longer exists
    memory = process_memory({"fetcher": [child.pid], "supervisor": [os.getpid(), child.pid]})
    assert memory["fetcher"] == 0
    assert memory["supervisor"] > 1024 * 1024
