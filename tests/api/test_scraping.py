"""What a scraping user of the Python API reads back: every item of every page, however the files were cut."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path

from tests.api.helpers import out_files, shop_options
from tests.api.pages import CutEscapeData, odd_values, three_items
from tests.fixtures.shop_web import CATEGORIES, ShopWeb
from webtrawl import Crawler
from webtrawl.store.sinks.export import export


def test_a_page_whose_items_run_on_into_the_next_jsonl_file_is_read_and_exported_whole(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    """A page's items go on in the next chunk file when the first fills (``jsonl_chunk``, 10,000 lines by default):
    ``items()`` and ``trawl export`` took the piece in the later file for the page's last set, as if the page had
    been fetched again, and left out the items before it (21 items stored, 15 read back)."""
    out = tmp_path / "crawl"
    result = Crawler(three_items, out=out, **shop_options(shop_web, max_pages=10, jsonl_chunk=4)).run()
    assert result.stats["items"] == 3 * result.stats["pages"] > 3 * 4  # pages straddle the files of 4 lines
    per_page = Counter(item["url"] for item in result.items())
    assert per_page == {url: 3 for url in per_page} and sum(per_page.values()) == result.stats["items"]
    assert all([i["index"] for i in result.items() if i["url"] == url] == [0, 1, 2] for url in per_page)
    on_disk = sum(len(f.read_bytes().splitlines()) for f in out_files(out, "items"))
    assert on_disk == result.stats["items"]
    assert export(out, "items", [f"sqlite:///{tmp_path}/e.db"], "wt-1") == (on_disk, len(per_page))
    with sqlite3.connect(tmp_path / "e.db") as conn:
        assert conn.execute("SELECT count(*), count(DISTINCT url) FROM items").fetchone() == (on_disk, len(per_page))


def test_a_table_sink_holds_the_items_as_their_json_lines_do(shop_web: ShopWeb, tmp_path: Path) -> None:
    """A nested dict with int keys and a NaN or infinite float: the JSONL (and ``items()``) hold ``{"1": "S"}`` and
    null, as JSON can; the SQLite sink was given the Python values and stored ``"{1: 'S', 2: 'M'}"`` (their repr)
    and ``Infinity``."""
    out, db = tmp_path / "crawl", tmp_path / "items.db"
    result = Crawler(odd_values, out=out, **shop_options(shop_web, max_pages=3, items_to=[f"sqlite:///{db}"])).run()
    items = {(i["url"], i["index"]): i["fields"] for i in result.items()}
    assert len(items) == 2 * result.stats["pages"] > 0
    assert items[shop_web.url("/"), 0] == {"title": "Shop", "by_size": {"1": "S", "2": "M"}, "price": 1.5}
    assert items[shop_web.url("/"), 1] == {"title": "Shop", "price": None, "stock": None, "rates": [None]}
    with sqlite3.connect(db) as conn:
        cursor = conn.execute("SELECT * FROM items")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor]
    stored = {}
    for row in rows:
        key = (row.pop("url"), row.pop("idx"))
        for column in ("crawl", "fetch_time", "_extra"):
            del row[column]
        cells = {k: json.loads(v) if k in ("by_size", "rates") and v is not None else v for k, v in row.items()}
        stored[key] = {k: v for k, v in cells.items() if v is not None}
    assert stored == {key: {k: v for k, v in fields.items() if v is not None} for key, fields in items.items()}


def test_follow_data_with_a_lone_surrogate_reaches_the_next_page_as_a_replacement_character(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    """Data holding a lone surrogate (what ``json.loads`` makes of a cut escape) could not be encoded into the
    link's queue entry: the parser died on every start and the crawl stopped ("parser-0 died at start 3 times")."""
    result = Crawler(CutEscapeData, out=tmp_path / "crawl", **shop_options(shop_web, max_pages=10)).run()
    items = sorted((i["fields"]["category"], i["fields"]["name"]) for i in result.items())
    assert items == sorted((name, "cut \ufffd") for name in CATEGORIES)
