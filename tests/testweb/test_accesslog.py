"""The access-log checks find planted violations and duplicates, and nothing in a clean log."""

from __future__ import annotations

from pathlib import Path

import pytest

from webtrawl_testweb import (
    AccessLog,
    LogEntry,
    duplicate_fetches,
    fetched_urls,
    load,
    politeness_violations,
    robots_first_violations,
)


def _e(host: str, path: str, start_s: float, end_s: float, *, scheme: str = "https", port: int = 8443) -> LogEntry:
    return LogEntry(
        start_ms=start_s * 1000,
        end_ms=end_s * 1000,
        host=host,
        port=port,
        scheme=scheme,
        method="GET",
        path=path,
        status=200,
        nbytes=10,
        user_agent="webtrawl/1",
    )


CLEAN = [
    _e("a.test", "/robots.txt", 0.0, 0.1),
    _e("b.test", "/robots.txt", 0.05, 0.2),  # other hosts may interleave
    _e("a.test", "/", 0.6, 0.7),
    _e("b.test", "/", 0.7, 0.75),
    _e("a.test", "/p/1.html", 1.2, 1.3),
]


def test_a_clean_log_has_no_findings() -> None:
    assert politeness_violations(CLEAN, 0.5) == []
    assert robots_first_violations(CLEAN) == []
    assert duplicate_fetches(CLEAN) == {}
    assert fetched_urls(CLEAN) == {
        "https://a.test:8443/",
        "https://b.test:8443/",
        "https://a.test:8443/p/1.html",
    }


def test_politeness_finds_a_short_gap_and_an_overlap() -> None:
    too_soon = _e("a.test", "/p/2.html", 1.5, 1.6)  # 0.2 s after /p/1.html ended
    overlapping = _e("b.test", "/p/3.html", 0.72, 0.9)  # starts while b.test's / is still running
    found = politeness_violations([*CLEAN, too_soon, overlapping], 0.5)
    assert [(v.host, v.earlier.path, v.later.path) for v in found] == [
        ("b.test", "/", "/p/3.html"),
        ("a.test", "/p/1.html", "/p/2.html"),
    ]
    assert found[0].gap_s == pytest.approx(-0.03)
    assert found[1].gap_s == pytest.approx(0.2) and found[1].required_s == 0.5


def test_politeness_compares_with_the_latest_end_so_far() -> None:
    long = _e("a.test", "/slow", 0.0, 5.0)
    short = _e("a.test", "/quick", 0.1, 0.2)  # overlaps `long`
    inside = _e("a.test", "/inside", 0.8, 0.9)  # 0.6 s after `short` ended, but `long` is still running
    after = _e("a.test", "/after", 5.6, 5.7)  # 0.6 s after `long` ended
    found = politeness_violations([after, inside, short, long], 0.5)
    assert [(v.earlier.path, v.later.path) for v in found] == [("/slow", "/quick"), ("/slow", "/inside")]


def test_crawl_delay_raises_the_required_gap_for_its_host_only() -> None:
    log = [_e("a.test", "/", 0.0, 0.1), _e("a.test", "/x", 0.8, 0.9), _e("b.test", "/", 0.0, 0.1)]
    log.append(_e("b.test", "/x", 0.8, 0.9))
    found = politeness_violations(log, 0.5, {"a.test": 1.0})
    assert [(v.host, v.required_s) for v in found] == [("a.test", 1.0)]
    assert politeness_violations(log, 0.5, {"a.test": 0.2}) == []  # min_gap_s still applies: 0.7 s >= 0.5 s


def test_politeness_can_leave_out_robots_requests() -> None:
    log = [_e("a.test", "/robots.txt", 0.0, 0.1), _e("a.test", "/", 0.15, 0.2)]
    assert len(politeness_violations(log, 0.5)) == 1
    assert politeness_violations(log, 0.5, ignore_paths={"/robots.txt"}) == []


def test_robots_first_is_checked_per_origin() -> None:
    page_first = _e("c.test", "/", 0.0, 0.1)
    plain_origin = _e("a.test", "/", 0.0, 0.05, scheme="http", port=8080)  # same host, other origin
    log = [*CLEAN, _e("c.test", "/robots.txt", 0.2, 0.3), page_first, plain_origin]
    assert robots_first_violations(log) == [page_first, plain_origin]


def test_duplicates_ignore_robots_by_default() -> None:
    again = _e("a.test", "/", 3.0, 3.1)
    robots_again = _e("a.test", "/robots.txt", 4.0, 4.1)
    log = [*CLEAN, again, again, robots_again]
    assert duplicate_fetches(log) == {"https://a.test:8443/": 3}
    assert duplicate_fetches(log, ignore_paths=()) == {
        "https://a.test:8443/": 3,
        "https://a.test:8443/robots.txt": 2,
    }


def test_urls_leave_out_default_ports() -> None:
    assert _e("a.test", "/x?y=1", 0, 1, port=443).url == "https://a.test/x?y=1"
    assert _e("a.test", "/", 0, 1, scheme="http", port=80).url == "http://a.test/"
    assert _e("a.test", "/", 0, 1, scheme="http", port=443).url == "http://a.test:443/"


def test_log_file_round_trip_and_marks(tmp_path: Path) -> None:
    path = tmp_path / "access.jsonl"
    log = AccessLog(path)
    log.add(CLEAN[0])
    mark = log.mark()
    for entry in CLEAN[1:]:
        log.add(entry)
    log.close()
    assert load(path) == CLEAN
    assert log.entries(since=mark) == CLEAN[1:]
    assert b'"bytes":10' in path.read_bytes().splitlines()[0]
    quiet = AccessLog(None, keep=False)
    quiet.add(CLEAN[0])
    with pytest.raises(RuntimeError):
        quiet.entries()
