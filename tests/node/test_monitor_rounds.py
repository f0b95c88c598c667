"""Monitoring a site over recrawl rounds (``--recrawl-after``, ``--changes``) as a user does: rounds in which the
site misbehaves between ordinary ones."""

from __future__ import annotations

from pathlib import Path

from tests.node.crawlrun import Crawl, polite_crawl, records, stats, wait_until
from webtrawl_testweb import TestWeb

DELAY = 0.05


def _round(web: TestWeb, out: Path, *args: str, resumed: bool) -> None:
    args += ("--recrawl-after", "0.001", "--changes", "--max-retries", "0")
    polite_crawl(web, out, *args, delay=DELAY, resumed=resumed)


def test_a_round_the_site_is_down_keeps_its_pages_watched(testweb: TestWeb, tmp_path: Path) -> None:
    watch = testweb.discovery.watch
    urls = watch.urls()
    out = tmp_path / "crawl"
    _round(testweb, out, urls["/"], resumed=False)
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
    watch = testweb.discovery.watch
    urls = watch.urls()
    out = tmp_path / "crawl"
    _round(testweb, out, urls["/"], resumed=False)
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
