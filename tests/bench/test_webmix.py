"""The web mix of a bench window, read from the access log: what the issue's real-web figures are compared with."""

from __future__ import annotations

import pytest

from webtrawl_bench.webmix import connections_opened, describe, measure
from webtrawl_testweb.accesslog import LogEntry


def _entry(t: float, host: str, path: str, kind: str, nbytes: int = 100, scheme: str = "https") -> LogEntry:
    status = 404 if kind.endswith("404") else 200
    return LogEntry(t, t + 5, host, 443, scheme, "GET", path, status, nbytes, kind=kind)


def test_the_window_is_measured_per_60_s_and_only_hosts_first_met_in_it_are_new() -> None:
    entries = [
        _entry(500, "old.test", "/robots.txt", "robots-404"),  # before the window: old.test is not new
        _entry(1_000, "old.test", "/a", "page", 100_000),
        _entry(1_100, "new.test", "/robots.txt", "robots-big", 600_000),
        _entry(1_200, "new.test", "/", "page", 300_000, scheme="http"),
        _entry(1_300, "new.test", "/big", "fault-huge", 10_000_000),
        _entry(1_400, "two.test", "/robots.txt", "robots"),
        _entry(1_500, "two.test", "/bomb", "fault-bomb", 300_000),
        _entry(1_600, "two.test", "/gone", "404", 10),
        _entry(1_700, "two.test", "/b", "page", 200_000),
        _entry(3_000, "late.test", "/robots.txt", "robots"),  # after the window
        _entry(-50, "before.test", "/robots.txt", "robots"),  # before the run started: another run's
    ]
    mix = measure(entries, run_start_ms=0, window=(1_000, 2_000))
    assert mix.seconds == 1.0
    assert mix.requests == 8 * 60
    assert mix.robots_per_request == pytest.approx(2 / 8)
    assert mix.new_hosts_per_request == pytest.approx(2 / 8)
    assert mix.hosts == 3 * 60
    assert mix.huge_per_page == pytest.approx(1 / 6) and mix.bomb_per_page == pytest.approx(1 / 6)
    assert mix.big_robots_per_host == pytest.approx(1 / 2)  # of the hosts whose robots.txt was asked for
    assert mix.https_per_request == pytest.approx(7 / 8)
    assert mix.body_mean_kb == pytest.approx(200)  # the ordinary pages only
    assert mix.body_p90_kb == pytest.approx(300)
    total = 100_000 + 600_000 + 300_000 + 10_000_000 + 100 + 300_000 + 10 + 200_000
    assert mix.kb_per_request == pytest.approx(total / 8 / 1e3)
    assert mix.mbytes == pytest.approx(total * 60 / 1e6)
    line = describe(mix)
    assert "robots_per_request 0.250 (real 0.23)" in line and "requests 480 (real 18000-19000)" in line


def test_a_connection_is_new_in_the_window_when_its_first_request_is() -> None:
    def on(t: float, port: int, client_port: int, kind: str = "page") -> LogEntry:
        return LogEntry(t, t + 5, "a.test", port, "https", "GET", "/", 200, 100, client_port=client_port, kind=kind)

    entries = [
        on(-50, 443, 40_000),  # another run's
        on(500, 443, 40_001),  # opened before the window, reused in it: not new
        on(1_100, 443, 40_001),
        on(1_000, 443, 40_002),  # opened in the window, two requests: one connection
        on(1_900, 443, 40_002),
        on(1_200, 80, 40_002),  # the same source port to another server port: another connection
        on(1_300, 443, 40_003, kind="stats"),  # the bench's own request for the web's counts
        on(1_400, 443, 0),  # a server that did not know the client's port
        on(2_000, 443, 40_004),  # after the window
    ]
    assert connections_opened(entries, run_start_ms=0, window=(1_000, 2_000)) == 2
