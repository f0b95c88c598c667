"""A crawl that waits says what for (issue 19: a crawl sat 13 minutes at 0.0/s with eta=- and a 'stalled' alert,
waiting, correctly, on hosts whose robots.txt answered 503)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.node.crawlrun import Crawl, dashboard_status, free_port, stats, wait_until
from webtrawl_testweb import TestWeb
from webtrawl_testweb.robots import Variant


def test_the_eta_of_a_crawl_waiting_for_robots_txt_retries_says_so(testweb: TestWeb, tmp_path: Path) -> None:
    seed = testweb.model.url(Variant.ROBOTS_503)  # a host whose robots.txt always answers 503
    port = free_port()
    args = [seed, *testweb.crawl_args(), "--fetchers", "1", "--parsers", "1", "--ui-port", str(port)]
    args += ["--robots-retry", "600", "--robots-give-up", "5"]
    crawl = Crawl(tmp_path / "crawl", args)
    try:
        waiting = "waiting: 1 host retrying robots.txt, next try in "
        wait_until(
            lambda: dashboard_status(port).get("progress", {}).get("waiting", "").startswith(waiting),
            120,
            waiting,
            crawl,
        )
        progress = dashboard_status(port)["progress"]
        assert progress["eta_s"] is None  # no rate: the ETA is what it waits for
        assert re.fullmatch(re.escape(waiting) + r"(9m[0-5]\ds|10m00s)", progress["waiting"]), progress["waiting"]
    finally:
        crawl.interrupt()
    assert crawl.wait(60) == 0, crawl.log()[-3000:]
    assert "eta=waiting: 1 host retrying robots.txt" in crawl.log()  # the final progress line too
    assert stats(tmp_path / "crawl")["waiting"].startswith(waiting)  # and trawl status of the stopped crawl
