"""End to end with extraction: the real ``trawl crawl --extract`` against the local test web.

Items are checked where a user reads them (``items/*.jsonl``) against the records: one item set per fetched page,
none lost or doubled by a kill -9 of the whole node and a resume, and user code that raises or loops recorded on
its pages while the crawl finishes.
"""

from __future__ import annotations

import os
import random
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.extract.corpus import SPIDERS
from tests.extract.spiders import _bucket
from tests.node.crawlrun import Crawl, records, stats, taken_back, wait_until
from webtrawl_testweb import TestWeb, WebOptions, duplicate_fetches

DELAY = 0.2
RULES = """
[[rule]]
url = "^https?://site\\\\d+\\\\.test"
content_type = "html"
[rule.fields]
title = "css:h1::text"
words = { css = "p::text", re = '(\\\\w+)' }
links = { css = "li a::attr(href)", all = true }
"""


def _items(out: Path) -> list[dict[str, Any]]:
    return records(out, "items")


def _args(web: TestWeb) -> list[str]:
    return [*web.crawl_args(), "--delay", str(DELAY), "--robots-retry", "0.2", "--fetchers", "2", "--parsers", "1"]


def _html_pages(rows: list[dict[str, Any]]) -> list[str]:
    """URLs of the records of fetched HTML pages (one per fetch)."""
    return [r["url"] for r in rows if r["status"] == 200 and r["content_type"] == "text/html" and r["error"] is None]


def _rules(tmp_path: Path) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(RULES)
    return path


def test_crawl_with_extract_writes_one_item_set_per_fetched_page(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    web = make_testweb(20, 5)
    seeds = web.seeds(2)
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*seeds, *_args(web), "--extract", str(_rules(tmp_path))])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]

    rows = records(out)
    pages = _html_pages(rows)
    items = _items(out)
    assert len(pages) == len(set(pages)) > 50
    assert Counter(i["url"] for i in items) == Counter(pages)  # exactly one item per fetched page, no other
    by_url = {r["url"]: r for r in rows}
    for item in items:
        model_page = web.model.respond_url(item["url"]).page
        assert model_page is not None
        assert item["index"] == 0 and item["fetch_time"] == by_url[item["url"]]["fetch_time"]
        assert item["fields"]["title"] == model_page.title
        assert len(item["fields"]["links"]) == len(model_page.links)
        assert by_url[item["url"]]["items"] == 1
    assert stats(out)["counters"]["items"] == len(items)


def test_kill_9_and_resume_lose_and_double_no_items(make_testweb: Callable[..., TestWeb], tmp_path: Path) -> None:
    web = make_testweb(20, 6)
    seeds = web.seeds(2)
    mark = web.mark()
    out = tmp_path / "crawl"
    args = [*_args(web), "--extract", str(_rules(tmp_path))]
    expected = web.model.expected_crawl(seeds)
    kill_after = random.Random(os.getpid()).randint(len(expected.fetched) // 10, len(expected.fetched) // 2)
    crawl = Crawl(out, [*seeds, *args])
    wait_until(lambda: len(_items(out)) >= kill_after, 300, f"{kill_after} items", crawl)
    crawl.kill_node()

    resume = Crawl(out, args, log_name="resume.log")
    assert resume.wait(300) == 0, resume.log()[-4000:]
    taken = taken_back(resume.log())

    items = _items(out)
    per_url = Counter(i["url"] for i in items)
    pages = set(_html_pages(records(out)))
    assert set(per_url) == pages  # every fetched page has its items: none lost
    # A URL's items are written twice only if it was in flight at the kill (fetched again after the resume).
    doubled = {url: n for url, n in per_url.items() if n > 1}
    assert sum(n - 1 for n in doubled.values()) <= taken, (doubled, taken)
    assert set(doubled) <= set(duplicate_fetches(web.entries(since=mark)))
    assert not list((out / "items").glob("*.open"))  # the killed parser's file was sealed (cut to whole lines)


def test_a_callback_that_raises_or_loops_is_recorded_and_the_crawl_finishes(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    web = make_testweb(6, 7, options=WebOptions(corpus_fraction=0.0, max_pages=6))
    out = tmp_path / "crawl"
    spec = f"{SPIDERS}:flaky"
    crawl = Crawl(out, [*web.seeds(2), *_args(web), "--extract", spec, "--extract-timeout", "0.3"])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]

    rows = [r for r in records(out) if r["status"] == 200 and r["content_type"] == "text/html"]
    assert len(rows) > 10
    items = {i["url"] for i in _items(out)}
    for row in rows:
        bucket = _bucket(row["url"])
        if bucket == 0:
            assert row["error"] == "extract-error" and row["error_detail"].startswith("ValueError: no price on")
        elif bucket == 1:
            assert row["error"] == "extract-error"
            assert row["error_detail"] == "extraction ran past --extract-timeout 0.3s"
        else:
            assert row["error"] is None and row["url"] in items
    failed = [r for r in rows if r["error"] == "extract-error"]
    assert {_bucket(r["url"]) for r in failed} == {0, 1}
    assert stats(out)["counters"]["err:extract-error"] == len(failed)
    assert crawl.log().count("Traceback") == 1  # the raising callback's traceback, once


def test_lone_surrogates_in_items_and_errors_are_stored_as_replacement_characters(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    """A cut ``\\ud83d`` escape in a page's JSON-LD is a lone surrogate once decoded, which UTF-8 cannot hold: it
    used to kill the parsers (the JSONL write raised) until the node stopped. It is U+FFFD, everywhere."""
    web = make_testweb(6, 7, options=WebOptions(corpus_fraction=0.0, max_pages=6))
    out = tmp_path / "crawl"
    table = f"sqlite:///{tmp_path}/items.db"
    crawl = Crawl(out, [*web.seeds(2), *_args(web), "--extract", f"{SPIDERS}:cut_escape", "--items-to", table])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    rows = [r for r in records(out) if r["status"] == 200 and r["content_type"] == "text/html"]
    failed = [r for r in rows if r["error"] == "extract-error"]
    assert len(rows) > 10 and failed and len(failed) < len(rows)
    assert {r["error_detail"].partition(" (")[0] for r in failed} == {"ValueError: cut \ufffd"}
    items = _items(out)
    assert len(items) == len(rows) - len(failed)
    for item in items:
        assert item["fields"]["name"] == "cut \ufffd" and item["fields"]["k\ufffd"][0] == "\U0001f600"
    with sqlite3.connect(tmp_path / "items.db") as db:
        assert db.execute("SELECT DISTINCT name FROM items").fetchall() == [("cut \ufffd",)]


def test_an_extractor_class_and_a_user_fetcher_named_by_import_path(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    """Both are imported inside the spawned processes that use them: the class extracts in the parsers (its
    recrawl capability needs --recrawl-after), the fetcher fetches every page in the fetchers."""
    web = make_testweb(10, 3)
    out = tmp_path / "crawl"
    log = tmp_path / "fetched-by-user.txt"
    fetcher = f"tests.fixtures.userfetcher:LoggingFetcher?path={log}"
    user = ["--extract", "tests.extract.spiders:Headlines", "--fetcher", fetcher]
    crawl = Crawl(out, [*web.seeds(2), *_args(web), *user, "--recrawl-after", "1d"])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    rows = records(out)
    fetched = {r["url"] for r in rows if r["status"]}
    assert len(fetched) > 20
    assert set(log.read_text().split()) == fetched
    items = _items(out)
    pages = _html_pages(rows)
    assert Counter(i["url"] for i in items) == Counter(pages)
    for item in items:
        model_page = web.model.respond_url(item["url"]).page
        assert model_page is not None and item["fields"] == {"headline": model_page.title}
