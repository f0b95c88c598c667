"""End to end: the item sinks that hold one set of rows per URL (a SQLite table, a ``json:`` file) over recrawl
rounds of the test web's watch site: a page that did not change, or failed in a round, keeps its items there as in
``items/*.jsonl`` and ``trawl export``; a page extracted again replaces them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.node.crawlrun import polite_crawl
from tests.node.test_changes_crawl import RULES  # the product page's name and price
from webtrawl_testweb import TestWeb

pytestmark = pytest.mark.usefixtures("fresh_watch_site")  # its tests edit the shared watch site


def _held(db: Path, array: Path) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    with sqlite3.connect(db) as conn:
        table = conn.execute("SELECT name, price FROM items ORDER BY url").fetchall()
    return table, [(row["name"], row["price"]) for row in json.loads(array.read_text())]


def test_a_page_unchanged_or_down_in_a_round_keeps_its_items_in_the_sinks(testweb: TestWeb, tmp_path: Path) -> None:
    watch = testweb.discovery.watch
    out, db, array = tmp_path / "crawl", tmp_path / "items.db", tmp_path / "items.json"
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    args = ("--extract", str(rules), "--items-to", f"sqlite:///{db}", "--items-to", f"json:{array}")
    args += ("--recrawl-after", "0.001", "--max-retries", "0", "--backoff-base", "0.1", "--backoff-max", "1")

    polite_crawl(testweb, out, watch.urls()["/"], *args, delay=0.05)
    assert _held(db, array) == ([("Garden hose", 10.0)], [("Garden hose", 10.0)])

    polite_crawl(testweb, out, *args, delay=0.05, resumed=True)  # the same bytes: a revisit, not extracted again
    assert _held(db, array) == ([("Garden hose", 10.0)], [("Garden hose", 10.0)])

    watch.failing = 503
    try:
        polite_crawl(testweb, out, *args, delay=0.05, resumed=True)  # the site is down for a round
    finally:
        watch.failing = 0
    assert _held(db, array) == ([("Garden hose", 10.0)], [("Garden hose", 10.0)])

    watch.round = 2  # the price changed: the page's new item replaces the old one
    polite_crawl(testweb, out, *args, delay=0.05, resumed=True)
    assert _held(db, array) == ([("Garden hose", 12.5)], [("Garden hose", 12.5)])
