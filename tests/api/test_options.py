"""Crawler keywords read as the command line's flags."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.extract.shop import ShopSpider
from webtrawl import ConfigError, Crawler, Spider


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ({"spider_arg": {"category": None}}, "--spider-arg category: None is not a value (leave 'category' out"),
        ({"header": {"Authorization": None}}, "--header Authorization: None is not a value"),
    ],
)
def test_a_none_in_a_dict_option_is_refused_not_sent_as_the_text_none(
    option: dict[str, Any], message: str, tmp_path: Path
) -> None:
    """``header={"Authorization": os.environ.get("TOKEN")}`` with TOKEN unset sent ``Authorization: None``, and a
    spider argument of None was the string "None" on the spider."""
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}"):
        Crawler(ShopSpider, out=tmp_path / "crawl", **option)
    crawler = Crawler(ShopSpider, out=tmp_path / "crawl", spider_arg={"pages": 2}, header={"X-N": 1})
    assert crawler.config.extraction.spider_arg == ("pages=2",)  # other values as their text, as before
    assert not (tmp_path / "crawl").exists()


class PagedShop(Spider):
    start_urls = ["http://shop.test/"]
    max_page = "3"  # a spider argument's default, as Scrapy spiders declare one


def test_a_spider_argument_given_as_a_keyword_as_scrapys_crawl_takes_it_says_to_use_spider_arg(tmp_path: Path) -> None:
    """``Crawler(Shop, category="Books")``, as Scrapy's ``process.crawl(Shop, category="Books")``, said "unknown
    option" with no word of spider_arg, and an attribute of the spider close to an option's name (``max_page``)
    "did you mean 'max_pages'?"."""
    with pytest.raises(
        ConfigError,
        match=re.escape("unknown option 'category' (a spider argument? give it as spider_arg={'category': ...})"),
    ):
        Crawler(ShopSpider, out=tmp_path, category="Books")
    with pytest.raises(
        ConfigError,
        match=re.escape("unknown option 'max_page' (PagedShop.max_page is the spider's: give it as spider_arg="),
    ):
        Crawler(PagedShop, out=tmp_path, max_page="2")
    with pytest.raises(ConfigError, match=re.escape("unknown option 'start_urls' (seed URLs are urls=[...]")):
        Crawler(ShopSpider, out=tmp_path, start_urls=["http://shop.test/"])  # not a spider argument: a string
    with pytest.raises(ConfigError, match=re.escape("unknown option 'dealy' (did you mean 'delay'?)")):
        Crawler(ShopSpider, out=tmp_path, dealy=2)  # an option's misspelling, as before
