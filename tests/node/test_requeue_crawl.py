"""``trawl requeue`` as a user meets it: a site answered 503 for a while, the crawl gave its pages up after their
retries; once the site is back, ``trawl requeue --out`` and a resume fetch them, and the records say so."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.fixtures.status_site import DOWN, StatusSite, page, site_fixture
from tests.node.clusterrun import TRAWL
from tests.node.crawlrun import Crawl, records, wait_until

_PAGES = ("/a", "/b")


def _answer(site: StatusSite, host: str, path: str) -> tuple[int, bytes]:
    """Its pages answer 503 while the site is down (the home page and robots.txt do not)."""
    if path == "/":
        return 200, b"<html><body>" + b"".join(b'<a href="%s">x</a>' % p.encode() for p in _PAGES)
    return DOWN if path in _PAGES and site.down else page(path)


site = site_fixture(_answer)


def _requeue(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TRAWL, "requeue", *args], capture_output=True, text=True, timeout=120)


def test_pages_given_up_while_a_site_was_down_are_fetched_once_it_is_back(site: StatusSite, tmp_path: Path) -> None:
    port = site.server_address[1]
    out = tmp_path / "crawl"
    args = [f"http://flaky.test:{port}/", "--resolve", "flaky.test=127.0.0.1", "--ip-allow", "127.0.0.0/8"]
    args += ["--ports", str(port), "--delay", "0.05", "--max-retries", "1", "--backoff-base", "0.05"]
    args += ["--fetchers", "1", "--parsers", "1"]
    crawl = Crawl(out, args)
    assert crawl.wait(120) == 0, crawl.log()[-3000:]
    failed = {r["url"].split(str(port))[1]: r["error"] for r in records(out) if r["error"]}
    assert failed == {"/a": "http-5xx", "/b": "http-5xx"}

    none = _requeue("--out", str(out), "--errors", "timeout,reset")
    assert none.returncode == 0, none
    assert (
        "queued 0 URL(s) that failed with timeout, reset again; 2 other failed URL(s) kept: 2 http-5xx" in none.stdout
    )
    assert "no failed URL is kept for timeout, reset; --errors takes the reasons above" in none.stdout
    site.down = False
    done = _requeue("--out", str(out))
    assert done.returncode == 0 and "queued 2 URL(s) again; 0 other failed URL(s) kept" in done.stdout, done
    assert f"trawl crawl --out {out}" in done.stdout

    resumed = Crawl(out, args)
    assert resumed.wait(120) == 0, resumed.log()[-3000:]
    latest = {r["url"].split(str(port))[1]: (r["status"], r["error"]) for r in records(out)}
    assert latest == {"/": (200, None), "/a": (200, None), "/b": (200, None)}  # the second records come last
    assert len(records(out)) == 5


def test_requeue_without_a_crawl_is_one_error_line(tmp_path: Path) -> None:
    result = _requeue()
    assert result.returncode != 0 and result.stderr.startswith("trawl: error: trawl requeue needs --out DIR")
    result = _requeue("--out", str(tmp_path / "nothing"))
    assert result.returncode != 0 and result.stderr.strip().count("\n") == 0 and "holds no crawl" in result.stderr


def test_requeue_into_a_running_crawl_is_fetched_by_it(site: StatusSite, tmp_path: Path) -> None:
    """Asked of a crawl still running, requeue said 'resume the crawl to fetch them: trawl crawl --out ...' (which
    would fail: the out is locked by the running node); the running crawl fetches them, and it says so. And
    ``--keep-running`` was ignored by ``trawl crawl`` (only ``trawl node`` waited): the crawl had ended when its
    frontier was empty, and a requeue found no crawl to fetch them; it now waits until ``trawl stop``."""
    port = site.server_address[1]
    out = tmp_path / "crawl"
    args = [f"http://flaky.test:{port}/", "--resolve", "flaky.test=127.0.0.1", "--ip-allow", "127.0.0.0/8"]
    args += ["--ports", str(port), "--delay", "0.05", "--max-retries", "1", "--backoff-base", "0.05"]
    args += ["--fetchers", "1", "--parsers", "1", "--keep-running"]
    crawl = Crawl(out, args)
    try:
        wait_until(lambda: sum(1 for r in records(out) if r["error"]) == 2, 120, "both pages given up", crawl)
        site.down = False
        done = _requeue("--out", str(out))
        assert done.returncode == 0 and "queued 2 URL(s) again" in done.stdout, done
        assert f"the crawl running in {out} fetches them" in done.stdout and "trawl crawl" not in done.stdout
        wait_until(lambda: sum(1 for r in records(out) if r["status"] == 200) == 3, 120, "the pages fetched", crawl)
        stop = subprocess.run([*TRAWL, "stop", "--out", str(out)], capture_output=True, text=True, timeout=60)
        assert stop.returncode == 0, stop
        assert crawl.wait(120) == 0, crawl.log()[-3000:]
    finally:
        if crawl.proc.poll() is None:
            crawl.kill_node()
