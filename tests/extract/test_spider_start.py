"""A spider at the crawl's start: building it, its start_requests(), and what is refused before any page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.extract.shop import CATEGORY_NAMES
from webtrawl.config import CrawlConfig, ExtractionOptions
from webtrawl.errors import ConfigError, InputError
from webtrawl.extract import build_extraction, load_spider
from webtrawl.extract.base import StartRequest
from webtrawl.extract.routing import decode_route

SHOP = Path(__file__).with_name("shop.py")


def _spider(name: str = "ShopSpider") -> str:
    return f"{SHOP}:{name}"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("NotASpider", "NotASpider is not a subclass of webtrawl.extract.Spider"),
        ("BadStart", "start_urls must be a list of URL strings"),
        ("Missing", "has no 'Missing'"),
    ],
)
def test_a_spider_that_cannot_be_built_fails_at_start(name: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        load_spider(_spider(name))


def test_start_requests_gives_seeds_with_their_callbacks_and_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Scrapy spider's start_requests() (or 2.13's async start()) seeds the crawl: not silently ignored."""
    monkeypatch.setenv("SHOP_START", "http://shop.test/")
    for name in ("StartRequestsShop", "AsyncStartShop"):
        extraction = build_extraction(ExtractionOptions(spider=_spider(name)))
        assert extraction is not None
        seeds = extraction.start_requests()
        assert [(s.url, decode_route(s.route)) for s in seeds] == [
            (f"http://shop.test/c/{c}/1", ("parse_listing", {"category": category}))
            for c, category in enumerate(CATEGORY_NAMES)
        ], name
    plain = build_extraction(ExtractionOptions(spider=_spider()))
    assert plain is not None
    assert plain.start_requests() == [StartRequest("http://shop.test/", "", -1)]  # by default its start_urls


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("raise", "start_requests() failed: RuntimeError: database away"),
        ("item", "start_requests() yielded a dict: it yields seeds, Follow(url, callback=..., data=...) or URL"),
        ("callback", "yielded Follow('http://shop.test/c/0/1', callback='parse_gone'): StartsBadly has no callback"),
        ("data", "Follow data is not JSON-able"),
    ],
)
def test_start_requests_going_wrong_is_one_clear_error_at_start(
    fault: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_START_FAULT", fault)
    extraction = build_extraction(ExtractionOptions(spider=_spider("StartsBadly")))
    assert extraction is not None
    with pytest.raises(InputError) as caught:
        extraction.start_requests()
    assert str(caught.value).startswith(f"--spider {_spider('StartsBadly')}: ")
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("WithSettings", "custom_settings is Scrapy's and is not read: give the crawl's options to Crawler("),
        ("WithDelay", "download_delay is Scrapy's and is not read: give the crawl's --delay (Crawler(..., delay=...)"),
        ("FromCrawler", "from_crawler() is Scrapy's and is not called: set up in __init__ (spider arguments come"),
        ("WithAgent", "user_agent is Scrapy's and is not read: give the crawl's --user-agent (Crawler(..., user_agent"),
        ("WithStatuses", "handle_httpstatus_list is Scrapy's and is not read: callbacks get pages that answer 2xx"),
        ("WithAllStatuses", "handle_httpstatus_all is Scrapy's and is not read: callbacks get pages that answer 2xx"),
        ("BadDomains", "allowed_domains holds domain names ('example.com'), not 'http://shop.test/'"),
    ],
)
def test_scrapy_attributes_webtrawl_would_not_honour_are_refused_at_start(name: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        load_spider(_spider(name))


def test_extract_and_spider_together_are_one_clear_error() -> None:
    from webtrawl.config import load

    with pytest.raises(ConfigError, match="--extract and --spider"):
        load({"extract": "x.toml", "spider": _spider()})
    assert CrawlConfig().with_options(spider=_spider()).extraction.enabled()


def test_a_spiders_name_or_its_file_alone_as_scrapy_takes_them_says_which_class_to_give() -> None:
    """``--spider shop.py:shop`` (Scrapy's ``crawl shop``, by the spider's name) said only "has no 'shop'", and
    ``--spider shop.py`` (Scrapy's ``runspider shop.py``) "want package.module:Name or file.py:Name"."""
    with pytest.raises(InputError, match=re.escape(f"has no 'shop' (the spider named 'shop' is the class ShopSpider: "
                                                   f"--spider {SHOP}:ShopSpider)")):  # fmt: skip
        load_spider(_spider("shop"))
    with pytest.raises(InputError, match=re.escape(f"has no 'Shop' (its spiders: --spider {SHOP}:ShopSpider, ")):
        load_spider(_spider("Shop"))
    with pytest.raises(InputError, match=re.escape(f"--spider {SHOP}: name its spider class: its spiders: --spider ")):
        load_spider(str(SHOP))
