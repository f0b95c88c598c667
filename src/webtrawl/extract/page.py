"""The page object a Python callback gets: what was fetched, the decoded text, and Scrapy-style selectors.

``css()`` and ``xpath()`` return parsel ``SelectorList`` objects (``.get()``, ``.getall()``, ``.attrib``, ``.re()``)
as in Scrapy. ``css()`` and the common absolute ``xpath()`` paths run on the lexbor tree the parser built for links (see
extract/lexsel.py); other XPath, and CSS lexbor cannot run, parse the page with lxml on their first call.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import Any, TypeVar, overload
from urllib.parse import urljoin

from parsel import Selector, SelectorList

from webtrawl.extract.base import Follow, Link
from webtrawl.extract.document import Document
from webtrawl.extract.lexsel import page_css, page_xpath
from webtrawl.extract.routing import decode_route

_T = TypeVar("_T")


class Page:
    """Read-only view of one page for a callback. Set ``follow_page_links = False`` to follow only yielded links.

    ``callback`` is the name of the spider method the page was routed to (``parse`` by default).
    """

    def __init__(
        self, doc: Document, follow_page_links: bool = True, check_callback: Callable[[str], None] | None = None
    ) -> None:
        """``check_callback``: a spider's, refusing a callback name it has no method for (a ValueError)."""
        self._doc = doc
        self.follow_page_links = follow_page_links
        self.callback = decode_route(doc.route)[0]
        self._check_callback = check_callback

    @property
    def data(self) -> dict[str, Any]:
        """The ``data`` of the Follow that led here (its first discovery's), ``{}`` if none: the page's own copy."""
        return self._doc.data

    @property
    def url(self) -> str:
        return self._doc.url

    @property
    def final_url(self) -> str:
        return self._doc.final_url

    @property
    def status(self) -> int:
        return self._doc.status

    @property
    def headers(self) -> dict[str, str]:
        """Response headers, names lower-case (repeated headers joined with ``, ``); looked up in any case, as
        Scrapy's ``response.headers.get("Content-Type")`` is."""
        out = Headers()
        for name, value in self._doc.headers:
            key = name.lower()
            out[key] = f"{out[key]}, {value}" if key in out else value
        return out

    @property
    def content_type(self) -> str:
        return self._doc.content_type

    @property
    def text(self) -> str:
        return self._doc.text

    @property
    def body(self) -> bytes:
        """The page's bytes, as Scrapy's ``response.body``: in the page's own charset, its Content-Encoding (gzip,
        br) undone, capped as any page is (``--max-size``); a rendered page's are its DOM's, in UTF-8."""
        return self._doc.body

    @property
    def depth(self) -> int:
        return self._doc.depth

    @property
    def jsonld(self) -> list[dict[str, Any]]:
        return self._doc.jsonld

    @property
    def meta(self) -> dict[str, str]:
        return self._doc.meta

    def json(self) -> Any:
        """The page's text read as JSON, as Scrapy's ``response.json()`` (an API's answer); a ``ValueError`` (the
        page's extract-error) if it is not JSON."""
        return self._json

    @cached_property
    def _json(self) -> Any:
        return json.loads(self._doc.text)

    def jmespath(self, query: str, **kwargs: Any) -> SelectorList[Any]:
        """A JMESPath query on the page's JSON (an API's answer), as Scrapy's ``response.jmespath`` (2.10+) runs it
        (``page.jmespath("products[].name").getall()``); on an HTML page, parsel's on its tree."""
        return self._jmespath_root.jmespath(query, **kwargs)

    @cached_property
    def _jmespath_root(self) -> Selector:
        try:
            found = self._json
        except ValueError:
            return self._doc.selector
        return Selector(root=found, type="json")

    def css(self, query: str) -> SelectorList[Any]:
        return page_css(self._doc, query)

    def xpath(self, query: str, **variables: Any) -> SelectorList[Any]:
        return page_xpath(self._doc, query, **variables)

    def re(self, pattern: str | re.Pattern[str]) -> list[str]:
        """All matches in the decoded text (a pattern's first group if it has groups)."""
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        return [m.group(1) if compiled.groups else m.group(0) for m in compiled.finditer(self._doc.text)]

    def urljoin(self, url: str) -> str:
        """``url`` made absolute against the page (its ``<base href>`` if it has one), as Scrapy's
        ``response.urljoin``: the URL a ``Follow`` of the same relative URL leads to."""
        return urljoin(self._base, url)

    @cached_property
    def _base(self) -> str:
        if "html" not in self.content_type:
            return self.url
        href = self.css("base::attr(href)").get()
        return urljoin(self.url, href.strip()) if href and href.strip() else self.url

    def follow(
        self,
        url: Any,
        callback: str | Callable[..., Any] | None = None,
        *,
        data: dict[str, Any] | None = None,
        priority: int | None = None,
        cb_kwargs: dict[str, Any] | None = None,
        **scrapy: Any,
    ) -> Follow:
        """A :class:`Follow` of ``url`` (Scrapy's ``response.follow``): a URL (relative ones are resolved against
        the page), an ``<a>``/``<link>``/``<area>`` selector (its ``href``), an attribute selector
        (``page.css("a::attr(href)")[0]``) or a LinkExtractor's :class:`Link`. ``callback``, ``data`` and
        ``cb_kwargs`` as for ``Follow``; Scrapy's other arguments (``meta``...) are refused with what to use
        instead."""
        if scrapy:
            name = sorted(scrapy)[0]
            raise ValueError(f"page.follow takes no {name}: {_INSTEAD.get(name, _INSTEAD['meta'])}")
        return self._checked(Follow(_href(url), priority, callback=callback, data=data, cb_kwargs=cb_kwargs))

    def follow_all(
        self,
        urls: Iterable[Any] | None = None,
        callback: str | Callable[..., Any] | None = None,
        *,
        data: dict[str, Any] | None = None,
        priority: int | None = None,
        css: str | None = None,
        xpath: str | None = None,
        cb_kwargs: dict[str, Any] | None = None,
    ) -> list[Follow]:
        """:meth:`follow` for each of ``urls``, or of what ``css`` or ``xpath`` selects (Scrapy's
        ``response.follow_all``); a selected element without an ``href`` (a pagination's current page, ``<a
        class="page-link">3</a>``) is passed over, as Scrapy's does."""
        if (urls is not None) + (css is not None) + (xpath is not None) != 1:
            raise ValueError("follow_all takes one of urls, css= or xpath=")
        self._checked(Follow(None, callback=callback))  # a misspelt name: refused when it selects nothing too
        found: Iterable[Any] = (
            urls if urls is not None else self.css(css) if css is not None else self.xpath(xpath or "")
        )
        return [
            self.follow(url, callback, data=data, priority=priority, cb_kwargs=cb_kwargs)
            for url in found
            if not _no_href(url)
        ]

    def _checked(self, follow: Follow) -> Follow:
        if self._check_callback is not None and follow.callback is not None:
            self._check_callback(follow.callback)
        return follow

    def __repr__(self) -> str:
        return f"<Page {self.url} {self.status}>"


class Headers(dict[str, str]):
    """A page's response headers: names lower-case, found in any case (HTTP's names are; a ported spider's
    ``headers.get("Content-Type")`` read None)."""

    def __getitem__(self, name: str) -> str:
        return super().__getitem__(name.lower() if isinstance(name, str) else name)

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name.lower() if isinstance(name, str) else name)

    @overload
    def get(self, name: str, default: None = None, /) -> str | None: ...
    @overload
    def get(self, name: str, default: str, /) -> str: ...
    @overload
    def get(self, name: str, default: _T, /) -> str | _T: ...

    def get(self, name: str, default: Any = None, /) -> Any:
        return super().get(name.lower() if isinstance(name, str) else name, default)


# What page.follow says of the arguments of Scrapy's Request it does not take: what to do instead.
_INSTEAD = {
    "meta": "pass data={...} (the next page's page.data) instead",
    "dont_filter": "a URL is queued once per crawl (--recrawl-after fetches pages again)",
    "headers": "every request carries the crawl's --header values (Crawler(header={...})); a spider or a callback "
    "has no per-request headers (a rules file's headers are per URL regex)",
    "cookies": "give --cookies (one jar per crawl)",
    "errback": "a page that fails has its error in its record (records/*.jsonl)",
    "method": "webtrawl follows links with GET",
    "body": "webtrawl follows links with GET",
}


def _no_href(url: Any) -> bool:
    """An element selector without an href (an ``<a>`` of no link, an ``<img>``)."""
    attrib = getattr(url, "attrib", None) if not isinstance(url, str) else None
    return isinstance(attrib, dict) and bool(attrib) and "href" not in attrib


def _href(url: Any) -> str | None:
    """What ``page.follow`` follows: a string as it is; a Link's URL; an element selector's href; a text or
    attribute selector's value."""
    if url is None or isinstance(url, str):
        return url
    if isinstance(url, Link):  # a LinkExtractor's, as Scrapy's response.follow takes one
        return url.url
    if isinstance(url, SelectorList):
        raise ValueError("page.follow takes one URL or selector, not a list of them: use page.follow_all")
    attrib, get = getattr(url, "attrib", None), getattr(url, "get", None)
    if not isinstance(attrib, dict) or get is None:
        raise ValueError(f"page.follow wants a URL string or a selector, not a {type(url).__name__}")
    if not attrib:
        value = get()
        return value if isinstance(value, str) else None
    href = attrib.get("href")
    if href is None:
        raise ValueError("page.follow: the selected element has no href (select an <a>, <link> or <area>)")
    return str(href)
