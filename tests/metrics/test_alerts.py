"""Alert conditions on hand-made samples: when each fires, that it fires once, and when it resolves."""

from __future__ import annotations

import logging

import pytest

from webtrawl.metrics.alerts import Alerts, AlertSettings, Sample

OFF = AlertSettings(error_rate=0, stall_s=0, memory=0, disk_free=0, redis_memory=0)


def _sample(at: float, stored: int = 0, errors: int = 0, fetched: int = 0, pending: int = 10, **kw: int) -> Sample:
    return Sample(at=at, stored=stored, errors=errors, fetched=fetched, pending=pending, **kw)


def test_error_rate_fires_once_after_a_full_window_and_resolves(caplog: pytest.LogCaptureFixture) -> None:
    alerts = Alerts(AlertSettings(error_rate=0.1, window_s=10, min_urls=20, stall_s=0, disk_free=0))
    caplog.set_level(logging.INFO, "webtrawl.alerts")
    events = []
    for t in range(0, 31):  # 30% of URLs fail for 30 s
        events += alerts.evaluate(_sample(t, stored=10 * t, errors=3 * t))
    assert [(e.name, e.state) for e in events] == [("error-rate", "firing")]
    assert events[0].value == pytest.approx(0.3)
    assert next(iter(alerts.active)) == "error-rate"
    for t in range(31, 50):  # then none fail
        events += alerts.evaluate(_sample(t, stored=10 * t, errors=90))
    assert [(e.name, e.state) for e in events] == [("error-rate", "firing"), ("error-rate", "resolved")]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and warnings[0].getMessage().startswith("alert error-rate: 30% of the 100 URLs")


def test_error_rate_needs_enough_urls_and_a_full_window() -> None:
    alerts = Alerts(AlertSettings(error_rate=0.1, window_s=10, min_urls=20, stall_s=0, disk_free=0))
    for t in range(0, 9):  # everything fails, but the window is not full yet
        assert alerts.evaluate(_sample(t, stored=10 * t, errors=10 * t)) == []
    quiet = Alerts(AlertSettings(error_rate=0.1, window_s=10, min_urls=20, stall_s=0, disk_free=0))
    for t in range(0, 40):  # 1 URL a second: 10 per window, fewer than min_urls
        assert quiet.evaluate(_sample(t, stored=t, errors=t)) == []


def test_stall_fires_when_nothing_is_fetched_while_work_is_pending() -> None:
    alerts = Alerts(AlertSettings(error_rate=0, stall_s=5, disk_free=0))
    for t in range(0, 5):
        assert alerts.evaluate(_sample(t, fetched=t)) == []
    fired = [e for t in range(5, 11) for e in alerts.evaluate(_sample(t, fetched=4))]
    assert [(e.name, e.state) for e in fired] == [("stalled", "firing")]
    assert [e.state for e in alerts.evaluate(_sample(11, fetched=5))] == ["resolved"]
    idle = Alerts(AlertSettings(error_rate=0, stall_s=5, disk_free=0))
    assert [e for t in range(0, 20) for e in idle.evaluate(_sample(t, pending=0))] == []  # nothing to do: no stall


def test_no_stall_while_the_crawl_waits_for_hosts_in_back_off_or_robots_retries() -> None:
    """Issue 19: a crawl waiting, correctly, on hosts whose robots.txt answers 503 raised a 'stalled' alert."""
    waiting = "waiting: 12 hosts retrying robots.txt, next try in 4m10s"
    alerts = Alerts(AlertSettings(error_rate=0, stall_s=5, disk_free=0))
    assert [e for t in range(0, 30) for e in alerts.evaluate(Sample(t, 0, 0, 4, 10, waiting=waiting))] == []
    fired = [e for t in range(30, 40) for e in alerts.evaluate(_sample(t, fetched=4))]  # waiting for nothing known
    assert [(e.name, e.state) for e in fired] == [("stalled", "firing")]


def test_memory_disk_and_redis_thresholds() -> None:
    settings = AlertSettings(error_rate=0, stall_s=0, memory=1000, disk_free=500, redis_memory=0)
    alerts = Alerts(settings)
    events = alerts.evaluate(_sample(0, rss=2000, disk_free=100, redis_used=95, redis_max=100))
    assert sorted(e.name for e in events) == ["disk", "memory", "redis-memory"]  # redis: 90% of maxmemory
    assert alerts.evaluate(_sample(1, rss=2000, disk_free=100, redis_used=95, redis_max=100)) == []
    assert Alerts(OFF).evaluate(_sample(0, rss=10**12, disk_free=0, redis_used=10**12, redis_max=1)) == []


def test_the_hook_gets_the_alert_in_variables_and_as_json(tmp_path: object) -> None:
    import json
    from pathlib import Path

    out = Path(str(tmp_path))
    cmd = f'echo "$TRAWL_ALERT_NAME $TRAWL_ALERT_STATE" > {out}/env.txt; cat > {out}/doc.json'
    alerts = Alerts(AlertSettings(error_rate=0, stall_s=0, memory=1, disk_free=0, cmd=cmd), node="n1")
    alerts.evaluate(_sample(0, rss=10))
    alerts.close()
    assert (out / "env.txt").read_text() == "memory firing\n"
    doc = json.loads((out / "doc.json").read_text())
    assert doc["name"] == "memory" and doc["state"] == "firing" and doc["node"] == "n1" and doc["value"] == 10


@pytest.mark.parametrize(
    ("failed", "threshold", "said"),
    [(14, 0.01, "1.4% of the 1000 URLs"), (6, 0.005, "0.6% of the 1000 URLs"), (300, 0.1, "30% of the 1000 URLs")],
)
def test_the_error_rate_message_tells_the_rate_from_its_threshold(failed: int, threshold: float, said: str) -> None:
    """An alert that fires says a rate above its threshold: '1% ... (threshold 1%)' reads as if it should not
    have fired, and '--alert-error-rate 0.005' is no '0%'."""
    alerts = Alerts(AlertSettings(error_rate=threshold, window_s=10, min_urls=20, stall_s=0, disk_free=0))
    events = []
    for t in range(0, 11):
        events += alerts.evaluate(_sample(t, stored=100 * t, errors=failed * t // 10))
    assert [(e.name, e.state) for e in events] == [("error-rate", "firing")]
    message = events[0].message
    assert message.startswith(said), message
    shown = {"0.01": "1%", "0.005": "0.5%", "0.1": "10%"}[str(threshold)]
    assert message.endswith(f"(threshold {shown})"), message
