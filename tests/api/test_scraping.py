"""What a scraping user of the Python API reads back: every item of every page, however the files were cut."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

from tests.api.helpers import out_files, shop_options
from tests.api.pages import three_items
from tests.fixtures.shop_web import ShopWeb
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
