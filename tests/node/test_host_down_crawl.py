"""A site that is down does not hold the crawl: once its host is parked (--park-after failures in a row), its queued
URLs end at once as ``host-down`` records without a request, take no --max-pages budget, and ``trawl requeue``
queues them again."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

from tests.fixtures.status_site import DOWN, StatusSite, page, site_fixture
from tests.node.clusterrun import TRAWL
from tests.node.crawlrun import Crawl, records, stats

_DOWN = [f"/p/{i}" for i in range(30)]
_UP = [f"/ok/{i}" for i in range(5)]


def _answer(site: StatusSite, host: str, path: str) -> tuple[int, bytes]:
    return DOWN if host == "down.test" else page(path)  # down.test answers 503 to every page, up.test 200


site = site_fixture(_answer)


def test_a_site_that_is_down_gives_up_its_queued_urls_unrequested(site: StatusSite, tmp_path: Path) -> None:
    port = site.port
    out, seeds = tmp_path / "crawl", tmp_path / "seeds.txt"
    seeds.write_text(
        "".join(f"http://{h}:{port}{p}\n" for h, paths in (("down.test", _DOWN), ("up.test", _UP)) for p in paths)
    )
    args = ["--seeds", str(seeds), "--resolve", "down.test=127.0.0.1", "--resolve", "up.test=127.0.0.1"]
    args += ["--ip-allow", "127.0.0.0/8", "--ports", str(port), "--delay", "0.05", "--max-retries", "3"]
    args += ["--backoff-base", "0.05", "--backoff-max", "0.5", "--park-after", "2", "--max-depth", "1"]
    # the down host's 2 tried pages, one of them ended, and the up host's 5: the given-up pages must take none
    args += ["--fetchers", "1", "--parsers", "1"]
    crawl = Crawl(out, [*args, "--max-pages", "7"])
    assert crawl.wait(120) == 0, crawl.log()[-3000:]
    assert "--max-pages 7 reached" not in crawl.log()

    rows = records(out)
    by_path = {r["url"].split(str(port))[1]: r for r in rows}
    assert Counter(r["url"] for r in rows).most_common(1)[0][1] == 1  # one record per URL
    assert set(by_path) == {*_DOWN, *_UP}
    assert all(by_path[p]["error"] is None for p in _UP)
    requested = Counter(path for host, path in site.requests if host == "down.test" and path != "/robots.txt")
    assert sum(requested.values()) == 2  # the two failures that parked it (--park-after 2), then no request
    parked_by = [p for p in requested if by_path[p]["error"] == "http-5xx"]
    assert len(parked_by) == 1  # its retries ended there; the first one, retried, was given up with the rest
    given_up = [p for p in _DOWN if by_path[p]["error"] == "host-down"]
    assert len(given_up) == 29 and len(set(given_up) - set(requested)) == 28
    detail = by_path[given_up[-1]]["error_detail"]
    assert "down.test failed 2 times in a row" in detail and "503" in detail, detail

    counters = stats(out)["counters"]
    # fetched: the up host's pages and the one that parked the down host, none given up
    assert (counters["fetched"], counters["given-up"], counters["err:host-down"]) == (6, 29, 29)

    requeued = subprocess.run([*TRAWL, "requeue", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert requeued.returncode == 0 and "queued 30 URL(s) again" in requeued.stdout, requeued
    # Still down: the next run tries one of them after the parked wait, and that failure gives up the rest again.
    # Its --max-pages counts the 6 pages ended before, not the given-up ones: 2 more are allowed, 1 is used.
    resumed = Crawl(out, [*args, "--max-pages", "8"], log_name="resume.log")
    assert resumed.wait(120) == 0, resumed.log()[-3000:]
    assert "--max-pages 8 reached" not in resumed.log()
    again = Counter(path for host, path in site.requests if host == "down.test" and path != "/robots.txt")
    assert sum(again.values()) == 3
    later = records(out)[len(rows) :]
    assert sorted(r["url"].split(str(port))[1] for r in later) == sorted(_DOWN)  # a second record each
    assert Counter(r["error"] for r in later) == {"host-down": 29, "http-5xx": 1}
    assert "down.test failed 3 times in a row" in later[-1]["error_detail"]
