"""Callbacks the API tests crawl with (imported by name in the crawler's parser processes)."""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

from tests.extract.shop import ShopSpider
from webtrawl import Follow, Page, Spider
from webtrawl.fetch.base import FetchRequest, HttpFetcher
from webtrawl.fetch.response import Response
from webtrawl.politeness import RobotsRules


def title(page: Page) -> Iterator[dict[str, Any]]:
    yield {"title": page.css("h1::text").get()}


class Shop(ShopSpider):
    """The tests' shop spider, seeded by the crawl's ``urls`` instead of ``SHOP_START``."""

    start_urls: ClassVar[list[str]] = []


def three_items(page: Page) -> Iterator[dict[str, Any]]:
    """Three items of every page: a listing's rows, say."""
    for row in range(3):
        yield {"title": page.css("h1::text").get(), "row": row}


def title_but_exit_on_product_1(page: Page) -> Iterator[dict[str, Any]]:
    """A callback that gives up on one page the way scripts do, with sys.exit()."""
    if page.url.endswith("/p/1"):
        sys.exit("giving up on this page")
    yield {"title": page.css("h1::text").get()}


class BuggyFetcher(HttpFetcher):
    """A user's fetcher with a bug that shows on product pages only."""

    name = "buggy"
    role = "plain"

    async def fetch(self, request: FetchRequest, rules: RobotsRules) -> Response:
        if "/p/" in request.url:
            raise ValueError(f"cannot fetch {request.url}")
        return await super().fetch(request, rules)


def odd_values(page: Page) -> Iterator[dict[str, Any]]:
    """Values JSON has no spelling for as Python holds them: a nested dict's int keys, NaN and infinities."""
    yield {"title": page.css("h1::text").get(), "by_size": {1: "S", 2: "M"}, "price": 1.5}
    yield {"title": page.css("h1::text").get(), "price": float("nan"), "stock": float("inf"), "rates": [-math.inf]}


class CutEscapeData(Spider):
    """Carries a name with a lone surrogate (``json.loads`` of a cut ``\\ud83d`` escape in a page's JSON-LD) to each
    category it follows."""

    def parse(self, page: Page) -> Iterator[Any]:
        for href in page.css("a.cat::attr(href)").getall():
            yield Follow(href, callback="parse_listing", data={"name": json.loads('"cut \\ud83d"')})

    def parse_listing(self, page: Page) -> Iterator[dict[str, Any]]:
        yield {"category": page.css("h1::text").get(), "name": page.data["name"]}
