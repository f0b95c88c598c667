"""Spiders: a class whose methods are callbacks, each page handled by the one its link was followed with.

``trawl crawl --spider package.module:Class`` (or ``file.py:Class``) builds the class in each parser process
(without arguments) and calls, for each page, the method its route names (``parse`` for seeds, the spider's
``start_urls`` and links followed without a callback). A callback yields items (dicts) and links
(:class:`~webtrawl.extract.base.Follow` with ``callback=`` and ``data=``, or plain strings, which go to ``parse``).
Unlike a ``--extract`` function, a spider follows only what its callbacks yield (``follow_page_links = True`` on
the class, or on one page, adds the page's own links, routed to ``parse``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from webtrawl.errors import InputError, UserCodeError
from webtrawl.extract.base import ExtractResult, Follow
from webtrawl.extract.callback import collect
from webtrawl.extract.document import Document
from webtrawl.extract.page import Page
from webtrawl.extract.routing import DEFAULT_CALLBACK, encode_route
from webtrawl.importpath import load_object


class Spider:
    """Subclass it: ``start_urls`` are crawled first and handled by ``parse(self, page)``; other callbacks are
    methods of the same shape, named by the links that lead to them. One instance per parser process: keep no
    state between pages that the crawl needs (a page may be handled in any process, or again after a crash)."""

    name: ClassVar[str] = ""
    start_urls: ClassVar[list[str]] = []
    follow_page_links: ClassVar[bool] = False

    def parse(self, page: Page) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no parse(self, page) method")


def load_spider(spec: str) -> SpiderExtractor:
    """The spider ``--spider module:Class`` names, built; :class:`InputError` if it cannot be."""
    cls = load_object(spec, "--spider", "spider")
    name = spec.rpartition(":")[2]
    if not (isinstance(cls, type) and issubclass(cls, Spider)):
        raise InputError(f"--spider {spec}: {name} is not a subclass of webtrawl.extract.Spider")
    try:
        spider = cls()
    except Exception as exc:
        raise InputError(f"--spider {spec}: {name}() failed: {type(exc).__name__}: {exc}") from None
    urls = spider.start_urls
    if isinstance(urls, str) or not all(isinstance(url, str) for url in urls):
        raise InputError(f"--spider {spec}: start_urls must be a list of URL strings")
    return SpiderExtractor(spec, spider)


class SpiderExtractor:
    def __init__(self, name: str, spider: Spider) -> None:
        self.name = name
        self.spider = spider

    @property
    def start_urls(self) -> list[str]:
        return list(self.spider.start_urls)

    def extract(self, doc: Document) -> ExtractResult:
        page = Page(doc, self.spider.follow_page_links)
        return collect(self.callback(page.callback)(page), page, self._route)

    def callback(self, name: str) -> Callable[[Page], Any]:
        """The spider's method ``name``; :class:`UserCodeError` if it has none (or the name is private)."""
        method = getattr(self.spider, name, None) if not name.startswith("_") else None
        if method is None or not callable(method):
            raise UserCodeError(f"{type(self.spider).__name__} has no callback {name!r}")
        return method  # type: ignore[no-any-return]

    def _route(self, follow: Follow) -> str:
        name = DEFAULT_CALLBACK if follow.callback is None else follow.callback
        self.callback(name)  # a name the spider lacks fails on the page that yields it, not on the next one
        return encode_route(name, follow.data)
