"""Crawls of the local test web through the Python API, and what the tests read back."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from tests.fixtures.shop_web import ShopWeb
from webtrawl import CrawlResult
from webtrawl.options import BY_NAME
from webtrawl_testweb import TestWeb


def web_options(web: TestWeb) -> dict[str, Any]:
    """The test web's confining flags (``--resolve``, ``--ip-allow``, ``--ports``, ``--ca-file``) as keywords."""
    return _options_of(web.crawl_args())


def _options_of(args: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        name = flag.removeprefix("--").replace("-", "_")
        if BY_NAME[name].repeat:
            options.setdefault(name, []).append(value)
        else:
            options[name] = value
    return options


def small_crawl(web: TestWeb, **options: Any) -> dict[str, Any]:
    """A small quick node: one fetcher, one parser, short politeness delays and retries (the test web has hosts
    whose robots.txt answers 503 for a while)."""
    quick = {"delay": 0.1, "robots_retry": 0.2, "backoff_base": 0.2, "max_retries": 1, "fetchers": 1, "parsers": 1}
    return {**web_options(web), **quick, **options}


def html_pages(result: CrawlResult) -> list[str]:
    """URLs of the records of fetched HTML pages (one per fetch)."""
    rows = result.records()
    return [r["url"] for r in rows if r["status"] == 200 and r["content_type"] == "text/html" and r["error"] is None]


def title_per_page(result: CrawlResult) -> Counter[str]:
    """Items per URL, each checked to be the page's title item."""
    items = list(result.items())
    assert all(set(i) == {"url", "fetch_time", "index", "fields"} and set(i["fields"]) == {"title"} for i in items)
    return Counter(i["url"] for i in items)


def shop_options(shop: ShopWeb, **options: Any) -> dict[str, Any]:
    """A quick crawl of the shop, seeded with its home page."""
    quick = {"delay": 0.05, "fetchers": 1, "parsers": 2, "urls": [shop.url("/")]}
    return {**_options_of(shop.crawl_args()), **quick, **options}


def check_shop(shop: ShopWeb, result: CrawlResult) -> None:
    """Every product once, with its name and the category of the listing that led to it."""
    items = list(result.items())
    assert Counter(i["url"] for i in items) == {url: 1 for url in shop.category_of}
    for item in items:
        assert item["fields"]["category"] == shop.category_of[item["url"]]
        assert item["fields"]["name"] == "Product " + item["url"].rsplit("/", 1)[1]
    assert result.stats["items"] == len(items)


def out_files(out: Path, stream: str) -> list[Path]:
    return sorted((out / stream).glob("*.jsonl*"))
