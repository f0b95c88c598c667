"""A seeds file as editors and spreadsheets save it: the URLs it holds, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from webtrawl.config import CrawlConfig
from webtrawl.errors import InputError
from webtrawl.node.seeds import check_seeds, iter_seeds


def test_a_seeds_file_with_a_byte_order_mark_and_crlf_line_ends(tmp_path: Path) -> None:
    """Notepad and Excel's "CSV UTF-8" start the file with a BOM: the first seed was refused as no http(s) URL
    (``'\\ufeffhttps://...'``), and the crawl did not start."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"\xef\xbb\xbfhttps://example.org/one\r\n# comment\r\n\r\n  https://example.org/two  \r\n")
    urls = [url.url for batch in iter_seeds([], seeds) for url in batch]
    assert urls == ["https://example.org/one", "https://example.org/two"]


def test_only_a_new_crawl_given_no_seed_source_has_no_seeds(tmp_path: Path) -> None:
    """What may start with no URL on its command line: a sitemap, a seeds file, a spider's start URLs, a crawl on
    a shared Redis (``trawl seed``, another node), a resume (the crawl's Redis in out)."""
    new = CrawlConfig().with_options(out=tmp_path / "c")
    with pytest.raises(InputError, match=r"^no seeds"):
        check_seeds(new, spider_seeds=False)
    check_seeds(new.with_options(sitemap=("http://a.test/sitemap.xml",)), spider_seeds=False)
    check_seeds(new.with_options(seeds_file=tmp_path / "seeds.txt"), spider_seeds=False)
    check_seeds(new.with_options(seeds=("http://a.test/",)), spider_seeds=False)
    check_seeds(new, spider_seeds=True)
    check_seeds(new.with_options(redis="redis://127.0.0.1:6379/1"), spider_seeds=False)
    (tmp_path / "c" / "redis").mkdir(parents=True)
    check_seeds(new, spider_seeds=False)


def test_a_spider_given_as_extract_without_seeds_says_to_give_it_as_spider(tmp_path: Path) -> None:
    """``trawl crawl --extract shop.py:Shop`` (``Crawler("shop.py:Shop")``) said "no seeds": its start_urls were
    never looked for, and nothing said why."""
    spider = f"{Path(__file__).parents[1] / 'extract' / 'shop.py'}:ShopSpider"
    new = CrawlConfig().with_options(out=tmp_path / "c", extract=spider)
    with pytest.raises(InputError, match=r"ShopSpider is a Spider: give it as --spider .*\(spider= in Python\)$"):
        check_seeds(new, spider_seeds=False)
    callback = f"{Path(__file__).parents[1] / 'extract' / 'spiders.py'}:article"
    with pytest.raises(InputError, match=r"^no seeds"):  # a function callback has none to give
        check_seeds(new.with_options(extract=callback), spider_seeds=False)
