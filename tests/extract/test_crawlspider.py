"""Scrapy's LinkExtractor and Rule as a ported spider uses them: which links of a page are picked, and what a rule
that cannot work here says."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from webtrawl.errors import InputError
from webtrawl.extract import Document, Follow, LinkExtractor, Page, Rule, load_spider
from webtrawl.extract.crawlspider import CrawlSpider, Link

HTML = b"""<html><body>
<div id="nav"><a href="/c/1">Books</a> <a href="/about">About</a></div>
<ul class="products">
  <li><a href="/p/1"> Product <b>1</b> </a></li>
  <li><a href="/p/2" rel="nofollow">Product 2</a></li>
  <li><a href="/p/1">again</a></li>
  <li><a href="/files/p3.pdf">spec</a></li>
  <li><a href="https://cdn.shop.example/p/4">on the CDN</a></li>
  <li><a href="https://other.example/p/5">elsewhere</a></li>
  <li><a href="mailto:x@shop.example">mail</a></li>
</ul>
<map><area href="/p/6"></map><link href="/style.css" rel="stylesheet">
</body></html>"""


def _urls(extractor: LinkExtractor) -> list[str]:
    page = Page(Document(url="http://shop.example/c/0", text=HTML))
    return [link.url.removeprefix("http://shop.example") for link in extractor.extract_links(page)]


def test_a_link_extractor_picks_links_as_scrapys_does() -> None:
    everything = _urls(LinkExtractor())
    assert everything == [
        "/c/1",
        "/about",
        "/p/1",
        "/p/2",
        "https://cdn.shop.example/p/4",
        "https://other.example/p/5",
        "/p/6",
    ]  # fmt: skip  (each once, files and mailto: left out, <area> too, not <link>)
    assert _urls(LinkExtractor(allow=r"/p/\d+$", deny="/p/2")) == [
        "/p/1", "https://cdn.shop.example/p/4", "https://other.example/p/5", "/p/6",
    ]  # fmt: skip
    assert _urls(LinkExtractor(allow_domains="shop.example", deny_domains=["cdn.shop.example"], restrict_css="ul")) == [
        "/p/1", "/p/2",
    ]  # fmt: skip
    assert _urls(LinkExtractor(restrict_xpaths='//div[@id="nav"]')) == ["/c/1", "/about"]
    assert _urls(LinkExtractor(tags="area")) == ["/p/6"]
    assert "/files/p3.pdf" in _urls(LinkExtractor(deny_extensions=[]))
    assert _urls(LinkExtractor(restrict_css="#nav", process_value=lambda v: None if "about" in v else v + "?x")) == [
        "/c/1?x"
    ]


def test_a_link_says_its_text_and_nofollow() -> None:
    page = Page(Document(url="http://shop.example/c/0", text=HTML))
    links = LinkExtractor(restrict_css="ul", allow="/p/[12]$").extract_links(page)
    assert links == [Link("http://shop.example/p/1", "Product 1"), Link("http://shop.example/p/2", "Product 2", True)]


def test_scrapys_request_hooks_and_a_callback_the_spider_lacks_are_refused_when_the_spider_is_built() -> None:
    with pytest.raises(TypeError, match=re.escape("Rule(process_request=...) is Scrapy's request hook")):
        Rule(LinkExtractor(), process_request="add_headers")

    class Missing(CrawlSpider):
        rules = (Rule(LinkExtractor(), callback="parse_product"),)

    with pytest.raises(TypeError, match=re.escape("a rule names 'parse_product', which Missing has no method of")):
        Missing()
    with pytest.raises(InputError, match=re.escape("Misspelt has no method of (its callbacks: parse, parse_item,")):
        load_spider(f"{__file__}:Misspelt")  # as trawl crawl and Crawler(...).run() build it, before anything starts


class Misspelt(CrawlSpider):
    rules = (Rule(LinkExtractor(), callback="parse_itme"),)

    def parse_item(self, page: Page) -> Iterator[Any]:
        yield {}


class _AsyncShop(CrawlSpider):
    rules = (
        Rule(LinkExtractor(allow="/p/1$"), callback="parse_item"),
        Rule(LinkExtractor(allow="/p/2$"), callback="parse_listed"),
    )

    async def parse_item(self, page: Page) -> AsyncIterator[dict[str, str]]:
        yield {"url": page.url}

    async def parse_listed(self, page: Page) -> list[dict[str, str]]:
        return [{"listed": page.url}]


def test_a_rules_callback_may_be_async_as_scrapy_runs_them() -> None:
    """A rule's ``async def`` callback (an async generator, or a coroutine returning items) failed: its result was
    iterated as a plain one."""
    page = Page(Document(url="http://shop.example/p/1", text=HTML))
    assert list(_AsyncShop().parse_rule(page, _rule=0)) == [{"url": "http://shop.example/p/1"}]
    assert list(_AsyncShop().parse_rule(page, _rule=1)) == [{"listed": "http://shop.example/p/1"}]


class _ReturningShop(CrawlSpider):
    rules = (Rule(LinkExtractor(allow="/p/1$"), callback="parse_item"),)

    def parse_item(self, page: Page) -> dict[str, str]:
        return {"title": page.url}

    def parse_start_url(self, page: Page) -> dict[str, str]:
        return {"start": page.url}


def test_a_rules_callback_and_parse_start_url_may_return_one_item_as_scrapy_takes_it() -> None:
    """``return {...}`` from a rule's callback or parse_start_url (Scrapy takes one item returned alone): its keys
    were iterated as links (``title``, ``start``: relative URLs fetched as 404s) and the item was lost."""
    page = Page(Document(url="http://shop.example/p/1", text=HTML))
    assert list(_ReturningShop().parse_rule(page, _rule=0)) == [{"title": "http://shop.example/p/1"}]
    start = list(_ReturningShop().parse(page))
    assert start[0] == {"start": "http://shop.example/p/1"} and all(isinstance(v, Follow) for v in start[1:])


def test_a_link_extractors_restrict_text_and_canonicalize_are_taken_as_scrapys() -> None:
    """``LinkExtractor(restrict_text=...)`` or ``canonicalize=True``, Scrapy's, stopped the ported spider at import
    (an unexpected keyword argument)."""
    assert _urls(LinkExtractor(restrict_text=r"^Product \d", canonicalize=True)) == ["/p/1", "/p/2"]
    assert _urls(LinkExtractor(restrict_text=[re.compile("books", re.I), "CDN"])) == [
        "/c/1",
        "https://cdn.shop.example/p/4",
    ]
