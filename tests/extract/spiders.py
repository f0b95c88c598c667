"""Callbacks the tests run as users would (``--extract tests/extract/spiders.py:article``)."""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from webtrawl.extract import Document, ExtractResult, Follow, Page


def article(page: Page) -> Iterator[Any]:
    """One item per page from selectors, JSON-LD and meta; the canonical link to follow."""
    types = [obj.get("@type") for obj in page.jsonld if isinstance(obj.get("@type"), str)]
    yield {
        "title": page.css("title::text").get(),
        "h1": " ".join(page.xpath("string(//h1)").get("").split()),
        "lang": page.xpath("/html/@lang").get(),
        "og_title": page.meta.get("og:title"),
        "jsonld_types": types,
        "status": page.status,
    }
    canonical = page.css("link[rel=canonical]::attr(href)").get()
    if canonical:
        yield Follow(canonical)


def only_items(page: Page) -> list[dict[str, Any]]:
    """The page's h1 as one item; follows nothing but a made-up link."""
    page.follow_page_links = False
    return [{"h1": page.css("h1::text").get()}, "/made-up"]  # type: ignore[list-item]


def _bucket(url: str) -> int:
    return hashlib.sha1(url.encode()).digest()[0] % 3


def raise_some(page: Page) -> dict[str, Any]:
    """Fails on about a third of the pages (decided by the URL, so a refetch fails again)."""
    if _bucket(page.url) == 0:
        raise ValueError(f"no price on {page.url}")
    return {"h1": page.css("h1::text").get()}


def loop_on_some(page: Page) -> dict[str, Any]:
    """Never returns on about a third of the pages, and swallows ordinary exceptions while it loops."""
    if _bucket(page.url) == 1:
        for _ in itertools.count():
            try:
                pass
            except Exception:
                continue
    return {"h1": page.css("h1::text").get()}


def not_json(page: Page) -> dict[str, Any]:
    return {"h1": page.css("h1::text").get(), "when": object()}


def selection_item(page: Page) -> dict[str, Any]:
    return {"h1": page.css("h1::text").get(), "title": page.css("title::text"), "first": page.css("h1")[0]}


def bad_selector(page: Page) -> Iterator[Any]:
    yield {"h1": page.css("h1::text").get()}
    yield {"link": page.css("a[href=").get()}


def follow_selection(page: Page) -> Iterator[Any]:
    yield Follow(page.css("a")[0])


def bad_yield(page: Page) -> Iterator[Any]:
    yield 42


def _row(n: int) -> dict[str, Any] | None:
    return {"n": n} if n % 2 else None


def yields_none(page: Page) -> Iterator[Any]:
    """Scrapy's ``yield self.parse_row(row)`` of a helper that returns None for a row it skips."""
    for n in range(4):
        yield _row(n)


def contacts(page: Page) -> dict[str, Any]:
    return {"who": "Mail jane.doe@example.com or call +44 20 7946 0958", "n": 3, "on": "2019-11-19"}


def cut_escape(page: Page) -> dict[str, Any]:
    """What a page's JSON-LD with a cut emoji escape gives (``json.loads`` keeps a lone surrogate), in a value, a key
    and an error message (about a third of the pages); and an emoji split in two."""
    lone = json.loads('"cut \\ud83d"')
    if _bucket(page.url) == 0:
        raise ValueError(lone)
    return {"name": lone, json.loads('"k\\udc80"'): ["\ud83d" + "\ude00", page.css("h1::text").get()]}


def flaky(page: Page) -> dict[str, Any]:
    """Raises on one third of the pages, loops on another third, extracts the rest."""
    if _bucket(page.url) == 0:
        return raise_some(page)
    return loop_on_some(page)


def next_page(page: Page) -> Iterator[Any]:
    """Scrapy's idiom: the next-page link, None on the last page."""
    yield {"h1": page.css("h1::text").get()}
    yield Follow(page.css("a.next::attr(href)").get())


def ranked(page: Page) -> Iterator[Any]:
    """The page's own links, and its ``a.first`` links first of all (priority 0); --extract for the ranking tests."""
    yield {"h1": page.css("h1::text").get()}
    for href in page.css("a.first::attr(href)").getall():
        yield Follow(href, priority=0)


def bad_priority(page: Page) -> Iterator[Any]:
    yield Follow("/x", priority=9)


def list_data(page: Page) -> Iterator[Any]:
    yield Follow("/x", data=[])  # type: ignore[arg-type]  # what a user may pass: no dict


class Headlines:
    """An extractor class (``--extract tests.extract.spiders:Headlines``) with both optional capabilities: it sends
    a header to ``/api/`` URLs, tells the fetcher a page without an ``<h1>`` found nothing (``--render auto``) and
    gives ``/news/`` pages their own recrawl interval."""

    name = "headlines"
    sends_headers = True
    sets_recrawl = True

    def extract(self, doc: Document) -> ExtractResult:
        found = [node.text() for node in doc.tree.css("h1")]
        return ExtractResult(items=[{"headline": text} for text in found])

    def headers_for(self, url: str) -> dict[str, str]:
        return {"X-Headlines": "1"} if "/api/" in url else {}

    def wants(self, url: str) -> bool:
        return "/news/" in url

    def finds_no_items(self, doc: Document) -> bool:
        return not self.extract(doc).items

    def recrawl_after(self, url: str, content_type: str) -> float:
        return 60.0 if "/news/" in url else 0.0


class NotAnExtractor:
    """Has no extract method: ``--extract`` refuses it at start."""


def item_classes(page: Page) -> Iterator[Any]:
    """Items as Scrapy projects declare them (itemadapter: dataclass, attrs, pydantic) and as msgspec's Struct."""
    import dataclasses

    import attrs
    import msgspec
    import pydantic

    @dataclasses.dataclass
    class Data:
        kind: str

    @attrs.define
    class Attrs:
        kind: str
        tags: list[str]

    class Model(pydantic.BaseModel):
        kind: str
        price: float

    class Struct(msgspec.Struct):
        kind: str
        inner: dict[str, int]

    yield Data("dataclass")
    yield Attrs("attrs", ["a"])
    yield Model(kind="pydantic", price=1.5)
    yield Struct("struct", {"n": 1})


def returned_model(page: Page) -> Any:
    """A callback that returns (not yields) its one item, a pydantic model."""
    import pydantic

    class Model(pydantic.BaseModel):
        kind: str
        price: float

    return Model(kind="returned", price=2.5)


def reused_item(page: Page) -> Iterator[dict[str, Any]]:
    """One dict yielded row after row, a nested list in it grown between the yields (Scrapy exports each as it was
    when yielded)."""
    item: dict[str, Any] = {"tags": [], "specs": {}}
    for n, tag in enumerate("abc"):
        item["tags"].append(tag)
        item["specs"]["rows"] = n + 1
        yield item


def raise_midway(page: Page) -> Iterator[Any]:
    """Yields an item and a link, then fails, as a parser of a page with one odd product does."""
    yield {"n": 1}
    yield Follow("/kept")
    yield {"n": 2}
    raise ValueError("no price on the third")


async def araise_midway(page: Page) -> AsyncIterator[Any]:
    """``raise_midway`` as an async generator (Scrapy's ``async def parse`` with ``yield``)."""
    yield {"n": 1}
    yield Follow("/kept")
    yield {"n": 2}
    raise ValueError("no price on the third")


def raise_after_building(page: Page) -> list[Any]:
    """A function that builds its list and fails before returning it: nothing was handed on."""
    found: list[Any] = [{"n": 1}, Follow("/kept")]
    if found:
        raise ValueError("no price on the third")
    return found


def some_bad_values(page: Page) -> Iterator[Any]:
    """Good items around a value that is no item and an item that is not JSON."""
    yield {"n": 1}
    yield 42
    yield {"when": object()}
    yield {"n": 2}


def self_referencing_item(page: Page) -> Iterator[Any]:
    """An item that holds itself (a tree built with parent links): msgspec raises RecursionError, not TypeError."""
    yield {"n": 1}
    looped: dict[str, Any] = {"n": "loop"}
    looped["self"] = looped
    yield looped
    yield {"n": 2}


def selection_in_a_dataclass(page: Page) -> Iterator[Any]:
    """Scrapy's common slip (a field given a selection, not its .get()) in a dataclass item, between good items."""
    import dataclasses

    @dataclasses.dataclass
    class Product:
        title: Any
        inner: Any = None

    @dataclasses.dataclass
    class Inner:
        n: int

    yield {"n": 1}
    yield Product(page.css("h1::text"))
    yield Product("ok", Inner(3))
