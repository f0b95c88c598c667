"""The spider the tests run on the shop (tests/fixtures/shop_web.py), as a user would write it:
``trawl crawl --spider tests/extract/shop.py:ShopSpider``. Its start URL comes from ``SHOP_START``."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urljoin

from webtrawl import CloseSpider
from webtrawl.extract import CrawlSpider, Follow, LinkExtractor, Page, Rule, Spider


class ShopSpider(Spider):
    name = "shop"
    start_urls = [os.environ.get("SHOP_START", "http://shop.test/")]

    def parse(self, page: Page) -> Iterator[Any]:
        """The home page: one listing per category, with the category's name as data."""
        for link in page.css("a.cat"):
            yield Follow(link.attrib["href"], callback="parse_listing", data={"category": link.css("::text").get()})

    def parse_listing(self, page: Page) -> Iterator[Any]:
        category = page.data["category"]
        for href in page.css("a.product::attr(href)").getall():
            yield Follow(href, callback=self.parse_product, data={"category": category, "listing": page.url})
        yield Follow(page.css("a.next::attr(href)").get(), callback="parse_listing", data=page.data)

    def parse_product(self, page: Page) -> Iterator[Any]:
        yield {
            "name": page.css("h1.name::text").get(),
            "price": float(page.css(".price::text").re_first(r"[\d.]+") or 0),
            "category": page.data["category"],
            "listing": page.data["listing"],
            "callback": page.callback,
        }


CATEGORY_NAMES = ("Garden Tools", "Kitchen", "Books", "Bikes")  # the shop's (tests/fixtures/shop_web.py)


def _record_start() -> None:
    """A side effect of start_requests(), as a real one's API call: a line in the file ``SHOP_START_LOG`` names."""
    if os.environ.get("SHOP_START_LOG"):
        with open(os.environ["SHOP_START_LOG"], "a") as log:
            log.write("start\n")


class StartRequestsShop(ShopSpider):
    """Ported from Scrapy: ``start_requests()`` seeds each category's first listing page with its callback and
    data (the home page is never fetched); ``start_urls`` is ignored then, as in Scrapy."""

    start_urls = ["http://not-crawled.test/"]

    def start_requests(self) -> Iterator[Any]:
        base = os.environ["SHOP_START"]
        _record_start()
        for c, name in enumerate(CATEGORY_NAMES):
            yield Follow(urljoin(base, f"/c/{c}/1"), callback=self.parse_listing, data={"category": name})


class CategoryStartShop(StartRequestsShop):
    """``start_requests()`` seeding the one category its spider argument names (``--spider-arg category=Books``)."""

    category = ""

    def start_requests(self) -> Iterator[Any]:
        _record_start()
        url = urljoin(os.environ["SHOP_START"], f"/c/{CATEGORY_NAMES.index(self.category)}/1")
        yield Follow(url, callback=self.parse_listing, data={"category": self.category})


class AsyncStartShop(ShopSpider):
    """Scrapy 2.13's ``async def start()``: the same seeds from an async generator."""

    async def start(self) -> AsyncIterator[Any]:
        base = os.environ["SHOP_START"]
        _record_start()
        for c, name in enumerate(CATEGORY_NAMES):
            yield Follow(urljoin(base, f"/c/{c}/1"), callback="parse_listing", data={"category": name})


class StartsBadly(Spider):
    """``start_requests()`` going wrong in the way ``SHOP_START_FAULT`` names."""

    def start_requests(self) -> Iterator[Any]:
        fault = os.environ.get("SHOP_START_FAULT", "")
        yield "http://shop.test/fine"
        if fault == "raise":
            raise RuntimeError("database away")
        if fault == "item":
            yield {"name": "not a seed"}
        if fault == "callback":
            yield Follow("http://shop.test/c/0/1", callback="parse_gone")
        if fault == "relative":
            yield Follow("/c/0/1")
        if fault == "data":
            yield Follow("http://shop.test/c/0/1", data={"when": object()})


class PortedShop(Spider):
    """A Scrapy spider ported line by line: ``response.follow`` of selectors, ``follow_all``, ``urljoin``, and
    ``allowed_domains`` (its products also link to an offsite page)."""

    allowed_domains = ["shop.test"]

    def parse(self, page: Page) -> Iterator[Any]:
        for a in page.css("a.cat"):
            yield page.follow(a, self.parse_listing, data={"category": a.css("::text").get()})

    def parse_listing(self, page: Page) -> Iterator[Any]:
        self.logger.info("listing %s", page.url)
        data = {**page.data, "listing": page.url}
        yield from page.follow_all(css="a.product", callback=self.parse_product, data=data)
        for href in page.css("a.next::attr(href)"):
            yield page.follow(href, "parse_listing", data=page.data)

    def parse_product(self, page: Page) -> Iterator[Any]:
        image = page.urljoin(page.css("img::attr(src)").get() or "")
        yield {"name": page.css("h1::text").get(), "category": page.data.get("category"), "image": image}
        yield from page.follow_all(page.css("a.elsewhere::attr(href)").getall(), "parse_product")
        yield page.follow(page.url.replace("//shop.test", "//offsite.test"), "parse_product")  # never followed


class KwargsShop(Spider):
    """Scrapy's ``cb_kwargs``, ported unchanged: the callbacks take the data of their link as keyword parameters."""

    def parse(self, page: Page) -> Iterator[Any]:
        for a in page.css("a.cat"):
            yield page.follow(a, self.parse_listing, cb_kwargs={"category": a.css("::text").get()})

    def parse_listing(self, page: Page, category: str, number: int = 1) -> Iterator[Any]:
        kwargs = {"category": category, "listing": page.url, "number": number}
        yield from page.follow_all(css="a.product", callback=self.parse_product, cb_kwargs=kwargs)
        for a in page.css("a.next"):
            yield page.follow(a, self.parse_listing, cb_kwargs={"category": category, "number": number + 1})

    def parse_product(self, page: Page, category: str, **rest: Any) -> Iterator[Any]:
        yield {"name": page.css("h1::text").get(), "category": category, **rest}


class NumberData(KwargsShop):
    """A link whose data is not a dict, to a callback that takes keyword parameters; the next one is fine."""

    def parse(self, page: Page) -> Iterator[Any]:
        yield Follow("/p/1", callback="parse_product", data=5)  # type: ignore[arg-type]
        yield Follow("/p/2", callback="parse_product", data={"category": "Garden"})


class CategoryShop(ShopSpider):
    """Scrapy's ``scrapy crawl shop -a category=Books``: the products of the category the argument names."""

    start_urls = []

    def parse(self, page: Page) -> Iterator[Any]:
        for link in page.css("a.cat"):
            if link.css("::text").get() == getattr(self, "category", None):
                yield Follow(link.attrib["href"], callback="parse_listing", data={"category": self.category})


class ApiShop(Spider):
    """Scrapy's "scroll" tutorial spider, ported: an API's JSON pages, read with ``response.json()``."""

    def parse(self, page: Page) -> Iterator[Any]:
        data = page.json()
        for product in data["products"]:
            yield {"name": product["name"], "category": product["category"], "of": product["url"]}
        if data["has_next"]:
            yield page.follow(f"/api/products?page={data['page'] + 1}")


class BodyReader(Spider):
    """Scrapy's ``response.body`` idioms: the bytes' digest (a PDF's, an image's), and JSON read from them."""

    def parse(self, page: Page) -> Iterator[Any]:
        item: dict[str, Any] = {"size": len(page.body), "sha1": hashlib.sha1(page.body).hexdigest()}
        if page.content_type.endswith("json"):
            item["json"] = json.loads(page.body)
        yield item


class AsyncCallbacks(Spider):
    """Scrapy's ``async def`` callbacks: an async generator (``parse``) and a coroutine returning a list."""

    async def parse(self, page: Page) -> AsyncIterator[Any]:
        yield {"name": page.css("h1::text").get()}
        yield page.follow("/p/2", self.parse_product)

    async def parse_product(self, page: Page) -> list[Any]:
        return [{"product": page.css("h1::text").get(), "category": page.data.get("category")}]


class AsyncReusedDict(Spider):
    """An async generator that fills one dict again for each link and item, as sync callbacks may."""

    async def parse(self, page: Page) -> AsyncIterator[Any]:
        shared: dict[str, Any] = {}
        for a in page.css("a.cat"):
            shared["category"] = a.css("::text").get()
            yield shared
            yield Follow(a.attrib["href"], callback="parse", data=shared)


class WithSettings(Spider):
    custom_settings = {"DOWNLOAD_DELAY": 2}


class WithDelay(Spider):  # Scrapy's per-spider pace: crawled at the crawl's --delay without a word
    download_delay = 5


class FromCrawler(Spider):  # Scrapy builds it through from_crawler: its attributes were never set here
    api_key = ""

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> FromCrawler:
        spider = cls(*args, **kwargs)
        spider.api_key = crawler.settings.get("API_KEY")
        return spider


class WithAgent(Spider):
    user_agent = "PortedBot/1.0"


class WithStatuses(Spider):  # a ported spider whose callbacks handled 404 pages
    handle_httpstatus_list = [404]


class WithAllStatuses(Spider):
    handle_httpstatus_all = True


class BadDomains(Spider):
    allowed_domains = ["http://shop.test/"]


@dataclasses.dataclass
class Product:
    name: str
    price: float


class Broken(Spider):
    """Each of its callbacks fails in its own way; ``parse`` routes to them by the page's path."""

    def parse(self, page: Page) -> Iterator[Any]:
        path = page.url.rsplit("/", 1)[1]
        if path == "raise":
            raise ValueError("no price here")
        if path == "big":
            yield Follow("/next", data={"blob": "x" * 20_000})
        if path == "not-json":
            yield Follow("/next", data={"when": object()})
        if path == "unknown":
            yield Follow("/next", callback="parse_nothing")
        if path == "private":
            yield Follow("/next", callback="_helper")
        if path == "meta":
            yield page.follow("/next", self.parse, meta={"category": "x"})
        if path == "dont-filter":
            yield page.follow("/next", self.parse, dont_filter=True)
        if path == "headers":
            yield page.follow("/next", self.parse, headers={"Accept": "application/json"})
        if path == "no-kwarg":
            yield Follow("/next", callback=self.parse_needs, data={"other": 1})
        if path == "dataclass":
            yield Product("Rake", 9.5)
        if path == "typo":
            yield {"ok": "before"}
            yield Follow("/detail", callback="parse_detial")
            yield Follow("/next", callback="parse_needs", data={"category": "c"})
        if path == "follow-typo":
            yield {"ok": "before"}
            yield page.follow("/detail", "parse_detial")
        if path == "follow-all-typo":
            yield {"ok": "before"}
            yield from page.follow_all(css="a.none", callback="parse_detial")
        if path == "midway":
            yield Follow("/next", callback=self.parse_needs, data={"category": "c"})
            yield {"ok": "before"}
            raise ValueError("no price after the first")
        yield {"ok": path}

    def _helper(self, page: Page) -> None:
        return None

    def parse_needs(self, page: Page, category: str) -> Iterator[Any]:
        yield {"category": category}


class NotASpider:
    start_urls = ["http://shop.test/"]


class BadStart(Spider):
    start_urls = "http://shop.test/"  # type: ignore[assignment]


def plain(page: Page) -> Iterator[Any]:
    """A function callback (--extract): data reaches the next page, a callback name cannot."""
    yield {"data": page.data, "callback": page.callback}
    yield Follow("/with-data", data={"from": page.url})
    if page.url.endswith("/named"):
        yield Follow("/x", callback="parse_product")


class CrawlShop(CrawlSpider):
    """Ported from Scrapy's CrawlSpider: rules say which links to follow (the listings) and which pages are items
    (the products, with the rule's cb_kwargs); the home page's other links (/about) match no rule."""

    name = "crawlshop"
    allowed_domains = ["shop.test"]
    rules = (
        Rule(LinkExtractor(allow=r"/c/\d+/\d+$")),
        Rule(
            LinkExtractor(allow=(r"/p/\d+$", r"/go/\d+$"), restrict_css="ul"),
            callback="parse_item",
            cb_kwargs={"shop": "the shop"},
        ),
    )

    def parse_item(self, page: Page, shop: str) -> Iterator[Any]:
        yield {"name": page.css("h1.name::text").get(), "shop": shop, "callback": page.callback}


class ClosingShop(ShopSpider):
    """Scrapy's ``closed(reason)``: each parser process's spider writes its reason to the file ``SHOP_CLOSED``."""

    def closed(self, reason: str) -> None:
        with open(os.environ["SHOP_CLOSED"], "a") as log:
            log.write(f"{reason}\n")


class BigItemShop(ShopSpider):
    """The home page's item is 2 MB of text: over NATS's default max_payload (1 MB)."""

    def parse(self, page: Page) -> Iterator[Any]:
        yield {"text": "x" * 2_000_000}


class FeedShop(ShopSpider):
    """A feed's (or a sitemap's) entries read by a callback, each an item and a product to follow."""

    def parse_feed(self, page: Page) -> Iterator[Any]:
        for url in page.xpath("//*[local-name()='link' or local-name()='loc']/text()").getall():
            yield {"entry": url, "source": page.data["source"]}
            yield Follow(url, callback="parse_product", data={"category": "feed", "listing": page.url})


class CloseSpiderShop(ShopSpider):
    """Scrapy's ``raise CloseSpider("enough")`` in a callback: after its first product's item the crawl ends;
    ``closed(reason)`` writes the reason to the file ``SHOP_CLOSED_LOG`` names."""

    def parse_product(self, page: Page) -> Iterator[Any]:
        yield from super().parse_product(page)
        raise CloseSpider("enough products")

    def closed(self, reason: str) -> None:
        with open(os.environ["SHOP_CLOSED_LOG"], "a") as log:
            log.write(reason + "\n")
