"""Monitoring a site over recrawl rounds (``--recrawl-after``, ``--changes``) as a user does: rounds in which the
site misbehaves between ordinary ones."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
from collections import Counter
from pathlib import Path

import pytest

from tests.node.crawlrun import Crawl, polite_crawl, records, running, stats, taken_back, wait_until
from webtrawl_testweb import TestWeb
from webtrawl_testweb.accesslog import LogEntry
from webtrawl_testweb.watch import CUT_SHORT, WatchWeb

pytestmark = pytest.mark.usefixtures("fresh_watch_site")  # its tests edit the shared watch site

DELAY = 0.05


def _round(web: TestWeb, out: Path, *args: str, resumed: bool) -> list[LogEntry]:
    args += ("--recrawl-after", "0.001", "--changes", "--max-retries", "0")
    args += ("--backoff-base", "0.1", "--backoff-max", "1")  # a site back is not kept waiting by its back-off
    return polite_crawl(web, out, *args, delay=DELAY, resumed=resumed)


def _baseline(web: TestWeb, out: Path) -> tuple[WatchWeb, dict[str, str]]:
    """The watch site and its URLs, after the crawl's first (baseline) round of it into ``out``."""
    watch = web.discovery.watch
    urls = watch.urls()
    _round(web, out, urls["/"], resumed=False)
    return watch, urls


def test_a_round_the_site_is_down_keeps_its_pages_watched(testweb: TestWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    watch, urls = _baseline(testweb, out)
    watch.failing = 503
    try:
        _round(testweb, out, resumed=True)  # every page answers 503: not a change, and not the end of watching
    finally:
        watch.failing = 0
    assert records(out, "changes") == []
    assert stats(out)["counters"]["recrawl-queued"] == 5

    watch.round = 2  # back up, and edited: the next round sees every change since the last good copy
    _round(testweb, out, resumed=True)
    changes = {row["url"]: row["change"] for row in records(out, "changes")}
    expected = {"/": "changed", "/article.html": "changed", "/product.html": "changed", "/removed.html": "gone"}
    assert changes == {urls[path]: change for path, change in {**expected, "/added.html": "new"}.items()}
    assert stats(out)["counters"]["recrawl-queued"] == 10


def test_a_first_run_stopped_and_resumed_is_still_the_baseline(testweb: TestWeb, tmp_path: Path) -> None:
    watch = testweb.discovery.watch
    urls = watch.urls()
    out = tmp_path / "crawl"
    args = [urls["/"], *testweb.crawl_args(), "--recrawl-after", "0.001", "--changes", "--delay", "1"]
    first = Crawl(out, [*args, "--fetchers", "1", "--parsers", "1"])
    wait_until(lambda: len(records(out)) >= 2, 120, "two pages of the first run", first)
    first.interrupt()  # Ctrl-C half way through the first run: the rest of the site is not fetched yet
    assert first.wait(120) == 0, first.log()[-4000:]
    assert len(records(out)) < len(urls)
    _round(testweb, out, resumed=True)  # the first run goes on: its pages are the baseline, not news
    assert records(out, "changes") == []
    assert stats(out)["counters"]["fetched"] >= 5

    watch.round = 2
    _round(testweb, out, resumed=True)
    changes = {row["url"]: row["change"] for row in records(out, "changes")}
    expected = {"/": "changed", "/article.html": "changed", "/product.html": "changed", "/removed.html": "gone"}
    assert changes == {urls[path]: change for path, change in {**expected, "/added.html": "new"}.items()}


def test_pages_that_move_for_good_or_for_a_while(testweb: TestWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    watch, urls = _baseline(testweb, out)
    watch.moved = {"/article.html": (301, "/article-new.html"), "/product.html": (302, "/product-sale.html")}
    _round(testweb, out, resumed=True)
    changes = [(row["url"], row["change"]) for row in records(out, "changes")]
    moved = [(urls["/article.html"], "gone"), (watch.url("/article-new.html"), "new")]
    assert sorted(changes) == sorted([*moved, (watch.url("/product-sale.html"), "new")])  # not product.html

    watch.moved = {"/article.html": (301, "/article-new.html")}  # the sale is over, and the site is edited
    watch.round = 2
    _round(testweb, out, resumed=True)
    later = [(row["url"], row["change"]) for row in records(out, "changes")][len(changes) :]
    assert sorted(later) == sorted(
        [
            (urls["/"], "changed"),
            (urls["/product.html"], "changed"),  # watched all along, compared with its copy from before the sale
            (watch.url("/article-new.html"), "changed"),
            (watch.url("/product-sale.html"), "gone"),
            (urls["/removed.html"], "gone"),
            (urls["/added.html"], "new"),
        ]
    )


def test_a_round_killed_half_way_reports_each_change_once(testweb: TestWeb, tmp_path: Path) -> None:
    watch = testweb.discovery.watch
    watch.bulk = 60
    out = tmp_path / "crawl"
    hooked = tmp_path / "hooked.jsonl"
    hook = ("--on-change", f"cat >> {hooked}")
    _round(testweb, out, watch.url("/"), *hook, resumed=False)
    assert records(out, "changes") == []
    watch.bulk_version = dict.fromkeys(range(watch.bulk), 2)  # every bulk page changes

    args = [*testweb.crawl_args(), "--recrawl-after", "0.001", "--changes", "--max-retries", "0", *hook]
    args += ["--delay", "0.2", "--fetchers", "1", "--parsers", "1"]
    crawl = Crawl(out, args)
    kill_after = random.Random(os.getpid()).randint(5, 40)
    wait_until(lambda: len(records(out, "changes")) >= kill_after, 120, f"{kill_after} change rows", crawl)
    crawl.kill_node()
    resume = Crawl(out, args, log_name="resume.log")
    assert resume.wait(300) == 0, resume.log()[-4000:]
    changes = Counter((row["url"], row["change"]) for row in records(out, "changes"))
    assert taken_back(resume.log()) >= 0
    assert changes == Counter({(url, "changed"): 1 for url in watch.bulk_urls()})  # once each, none lost
    wait_until(lambda: hooked.exists() and hooked.read_text().count("\n") >= len(changes), 30, "the hooks")
    # every change's command ran; one of a page in flight at the kill may have run twice (README: commands are run
    # before the page's URL is completed, so they come twice, never not at all), where its row is written once
    ran = Counter(json.loads(line)["url"] for line in hooked.read_text().splitlines())
    assert set(ran) == {url for url, _ in changes}

    hooks = hooked.read_text()
    entries = _round(testweb, out, *hook, resumed=True)  # nothing changed: each page a 304 and a revisit, no rows
    assert sum(changes.values()) == len(records(out, "changes")) and hooked.read_text() == hooks
    bulk = [e.status for e in entries if e.path.startswith("/bulk/")]
    assert len(bulk) == watch.bulk and set(bulk) == {304}


def test_a_page_gone_for_a_round_is_new_when_it_comes_back(testweb: TestWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    watch, urls = _baseline(testweb, out)
    watch.round = 2
    _round(testweb, out, resumed=True)
    assert [row["change"] for row in records(out, "changes") if row["url"] == urls["/removed.html"]] == ["gone"]
    _round(testweb, out, resumed=True)  # still 404: gone once, quiet since
    assert [row["change"] for row in records(out, "changes") if row["url"] == urls["/removed.html"]] == ["gone"]
    watch.round = 3  # back, as a product that was out of stock
    _round(testweb, out, resumed=True)
    rows = [row for row in records(out, "changes") if row["url"] == urls["/removed.html"]]
    assert [row["change"] for row in rows] == ["gone", "new"] and "+It is back." in rows[1]["text_diff"]


def test_a_round_the_site_times_out_keeps_its_pages_watched(testweb: TestWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    watch, urls = _baseline(testweb, out)
    watch.failing = CUT_SHORT  # every answer stops half way: no HTTP status to go by, a timeout
    _round(testweb, out, "--total", "1", resumed=True)
    watch.failing = 0
    assert records(out, "changes") == []
    assert stats(out)["counters"]["err:timeout"] == 5

    watch.round = 2
    _round(testweb, out, resumed=True)
    changes = {row["url"]: row["change"] for row in records(out, "changes")}
    expected = {"/": "changed", "/article.html": "changed", "/product.html": "changed", "/removed.html": "gone"}
    assert changes == {urls[path]: change for path, change in {**expected, "/added.html": "new"}.items()}


def test_a_monitor_capped_by_max_pages_checks_that_many_pages_each_round(testweb: TestWeb, tmp_path: Path) -> None:
    """A baseline stopped at --max-pages with links still queued is a whole baseline: the same command (the cap is
    saved) starts a round and fetches up to the cap again, and pages never held are ``new`` from then on."""
    watch = testweb.discovery.watch
    urls = watch.urls()
    out = tmp_path / "crawl"
    _round(testweb, out, urls["/"], "--max-pages", "3", resumed=False)
    assert len(records(out)) == 3 and stats(out)["counters"]["queued"] > 0

    watch.round = 2
    _round(testweb, out, resumed=True)  # the cap of crawl.json: a round of 3 pages, not none
    assert len(records(out)) == 6
    checked = {row["url"] for row in records(out)[3:]}  # the known pages, not the links the baseline left queued
    assert checked == {row["url"] for row in records(out)[:3]}
    _round(testweb, out, "--max-pages", "100", resumed=True)  # a round with room for the whole site
    changes = Counter((row["url"], row["change"]) for row in records(out, "changes"))
    expected = {"/": "changed", "/article.html": "changed", "/product.html": "new", "/added.html": "new"}
    assert changes == Counter({(urls[path], change): 1 for path, change in expected.items()})


def test_a_date_and_an_ad_inside_the_article_are_no_change_when_left_out(testweb: TestWeb, tmp_path: Path) -> None:
    """Every page's article ends with a "Last updated" line and an ad that differ on every visit (main text to
    trafilatura): without --text-exclude each page is 'changed' every round; with it only real edits are."""
    watch = testweb.discovery.watch
    watch.noisy = True
    urls = watch.urls()
    plain, out = tmp_path / "plain", tmp_path / "crawl"
    _round(testweb, plain, urls["/"], resumed=False)
    _round(testweb, plain, resumed=True)
    assert {row["change"] for row in records(plain, "changes")} == {"changed"}  # noise, reported as change
    _round(testweb, out, urls["/"], "--text-exclude", ".updated, div.ad", resumed=False)
    _round(testweb, out, resumed=True)  # the option is kept by the resume (crawl.json)
    assert records(out, "changes") == []

    watch.round = 2
    _round(testweb, out, resumed=True)
    changes = {row["url"]: row["change"] for row in records(out, "changes")}
    expected = {"/": "changed", "/article.html": "changed", "/product.html": "changed", "/removed.html": "gone"}
    assert changes == {urls[path]: change for path, change in {**expected, "/added.html": "new"}.items()}
    assert not any("Last updated" in row["text_diff"] for row in records(out, "changes"))


def test_with_changes_links_a_round_reports_pages_whose_links_changed(testweb: TestWeb, tmp_path: Path) -> None:
    """--changes-links (kept by the resumes): a link added to every page's navigation, their text the same, is a
    ``links`` row per page with the link added; the link's own page (404) is no change, and a round after is quiet."""
    watch = testweb.discovery.watch
    urls = watch.urls()
    out = tmp_path / "crawl"
    _round(testweb, out, urls["/"], "--changes-links", resumed=False)
    _round(testweb, out, resumed=True)
    assert records(out, "changes") == []
    watch.nav_extra = ("/sale.html",)
    _round(testweb, out, resumed=True)
    rows = records(out, "changes")
    held = [url for path, url in urls.items() if path != "/added.html"]
    assert {row["url"]: row["change"] for row in rows} == dict.fromkeys(held, "links")
    assert all(row["links_diff"] == {"added": [watch.url("/sale.html")], "removed": []} for row in rows)
    assert all(row["text_diff"] == "" for row in rows) and stats(out)["counters"]["changes-links"] == 5
    _round(testweb, out, resumed=True)
    assert len(records(out, "changes")) == 5


def test_an_on_change_command_that_hangs_does_not_get_the_parser_killed(testweb: TestWeb, tmp_path: Path) -> None:
    """The parser waited 10 s for its running --on-change commands at the end, longer than the node gives parsers
    to finish: it was killed ('parsers did not finish within 8s'), and its hung commands, which it alone would
    have killed, ran on after the crawl."""
    out = tmp_path / "crawl"
    watch, _ = _baseline(testweb, out)
    watch.round = 2
    pids = tmp_path / "pids"
    try:
        _round(testweb, out, "--on-change", f"echo $$ >> {pids}; exec sleep 600", resumed=True)
        log = (out / "logs" / "trawl.log").read_text()
        assert "did not finish" not in log
        assert [pid for pid in map(int, pids.read_text().split()) if running(pid)] == []
    finally:
        for pid in map(int, pids.read_text().split() if pids.exists() else []):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_a_seed_given_again_to_a_recrawl_says_it_is_not_queued_again(testweb: TestWeb, tmp_path: Path) -> None:
    """The seed given again (to have it read now) was dropped as seen without a word: the run said only how many
    pages were due, and the user could not tell their URL had been ignored."""
    out = tmp_path / "crawl"
    _, urls = _baseline(testweb, out)
    _round(testweb, out, urls["/"], resumed=True)
    log = (out / "logs" / "trawl.log").read_text()
    assert "1 seed(s) given were queued or fetched in this crawl already: not queued again; a recrawl round" in log
