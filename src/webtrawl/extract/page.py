"""The page object a Python callback gets: what was fetched, the decoded text, and Scrapy-style selectors.

``css()`` and ``xpath()`` return parsel ``SelectorList`` objects (``.get()``, ``.getall()``, ``.attrib``, ``.re()``)
as in Scrapy. ``css()`` and the common absolute ``xpath()`` paths run on the lexbor tree the parser built for links (see
extract/lexsel.py); other XPath, and CSS lexbor cannot run, parse the page with lxml on their first call.
"""

from __future__ import annotations

import re
from typing import Any

from parsel import SelectorList

from webtrawl.extract.document import Document
from webtrawl.extract.lexsel import page_css, page_xpath
from webtrawl.extract.routing import decode_route


class Page:
    """Read-only view of one page for a callback. Set ``follow_page_links = False`` to follow only yielded links.

    ``callback`` is the name of the spider method the page was routed to (``parse`` by default).
    """

    def __init__(self, doc: Document, follow_page_links: bool = True) -> None:
        self._doc = doc
        self.follow_page_links = follow_page_links
        self.callback = decode_route(doc.route)[0]

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
        """Response headers, names lower-case (repeated headers joined with ``, ``)."""
        out: dict[str, str] = {}
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
    def depth(self) -> int:
        return self._doc.depth

    @property
    def jsonld(self) -> list[dict[str, Any]]:
        return self._doc.jsonld

    @property
    def meta(self) -> dict[str, str]:
        return self._doc.meta

    def css(self, query: str) -> SelectorList[Any]:
        return page_css(self._doc, query)

    def xpath(self, query: str, **variables: Any) -> SelectorList[Any]:
        return page_xpath(self._doc, query, **variables)

    def re(self, pattern: str | re.Pattern[str]) -> list[str]:
        """All matches in the decoded text (a pattern's first group if it has groups)."""
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        return [m.group(1) if compiled.groups else m.group(0) for m in compiled.finditer(self._doc.text)]

    def __repr__(self) -> str:
        return f"<Page {self.url} {self.status}>"
