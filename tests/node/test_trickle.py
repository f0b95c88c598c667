"""Requests that do not end in time: a trickling server (8 KB/s bodies) against timeouts and stops.

The server's access log is the judge: a request the crawler gave up must end at the server too before the host's
next request starts, and a stopped node must exit promptly and hand its unfinished URLs to the next run.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.fixtures.trickle_web import TrickleWeb
from tests.node.crawlrun import Crawl, records, stats, wait_until
from webtrawl_testweb import politeness_violations

DELAY = 0.5


def _args(web: TrickleWeb, *extra: str) -> list[str]:
    return [*web.seeds(), *web.crawl_args(), "--delay", str(DELAY), "--fetchers", "1", "--parsers", "1", *extra]


def test_a_timed_out_https_request_ends_at_the_server_before_the_hosts_next_one(
    trickle_web: TrickleWeb, tmp_path: Path
) -> None:
    out = tmp_path / "crawl"
    crawl = Crawl(out, _args(trickle_web, "--total", "2", "--max-retries", "0"))
    assert crawl.wait(300) == 0, crawl.log()[-3000:]
    by_url = {row["url"]: row for row in records(out)}
    assert set(by_url) == trickle_web.urls()
    assert {by_url[u]["error"] for u in by_url if "/slow/" in u} == {"timeout"}
    entries = trickle_web.log.entries()
    assert politeness_violations(entries, DELAY) == []


def _stuck_on_trickles(web: TrickleWeb, crawl: Crawl) -> None:
    wait_until(lambda: web.slow_in_flight >= 3, 120, "three trickling requests in flight", crawl)


def test_sigterm_ends_a_node_held_by_trickling_bodies_promptly_and_a_resume_fetches_what_it_abandoned(
    trickle_web: TrickleWeb, tmp_path: Path
) -> None:
    out = tmp_path / "crawl"
    crawl = Crawl(out, _args(trickle_web, "--total", "60"))
    _stuck_on_trickles(trickle_web, crawl)
    stopped_at = time.monotonic()
    crawl.proc.send_signal(signal.SIGTERM)
    assert crawl.wait(120) == 0, crawl.log()[-3000:]
    # The bound of issue 10 is 10 s, asserted with a generous margin: the bodies would take a minute.
    assert time.monotonic() - stopped_at < 15, crawl.log()[-3000:]
    first = stats(out)["counters"]
    assert first["inflight"] == 0  # every abandoned URL went back to its queue
    assert not [k for k in first if k.startswith("err:")]  # abandoned is not failed
    assert not [row for row in records(out) if "/slow/" in row["url"]]  # and has no record

    trickle_web.trickle = False
    resume = Crawl(out, _args(trickle_web, "--total", "60"), log_name="resume.log")
    assert resume.wait(300) == 0, resume.log()[-3000:]
    urls = [row["url"] for row in records(out)]
    assert sorted(urls) == sorted(trickle_web.urls())  # every URL, each exactly once
    assert {row["error"] for row in records(out)} <= {None, ""}
    # the requests cut by the stop ended at the server, and the resume kept each host's gap after them
    assert politeness_violations(trickle_web.log.entries(), DELAY) == []


def test_max_time_ends_a_node_held_by_trickling_bodies_promptly(trickle_web: TrickleWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    started = time.monotonic()
    crawl = Crawl(out, _args(trickle_web, "--total", "60", "--max-time", "5"))
    assert crawl.wait(120) == 0, crawl.log()[-3000:]
    assert trickle_web.slow_in_flight == 0 and "--max-time 5s reached" in crawl.log()
    assert time.monotonic() - started < 5 + 15, crawl.log()[-3000:]  # generous: the bodies take a minute
    assert stats(out)["counters"]["inflight"] == 0
