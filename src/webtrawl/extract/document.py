"""One page as extraction sees it: decoded text and its parsed trees, each built at most once and only when used.

``text`` may be handed over as UTF-8 bytes (what lexbor parsed): it is decoded on first use.

``tree`` is the lexbor tree the parser built for link extraction (reused, not parsed again); ``selector`` is a
parsel (lxml) selector, parsed on first use by XPath fields, CSS selectors lexbor cannot run, and callbacks.
"""

from __future__ import annotations

import json
import re
from functools import cached_property
from typing import Any

from parsel import Selector
from selectolax.lexbor import LexborHTMLParser

from webtrawl.extract.routing import decode_route

_XML = re.compile(r"[/+]xml$")


class Document:
    def __init__(
        self,
        *,
        url: str,
        text: str | bytes,
        final_url: str = "",
        status: int = 200,
        headers: list[tuple[str, str]] | None = None,
        content_type: str = "text/html",
        depth: int = 0,
        tree: LexborHTMLParser | None = None,
        route: str = "",
        body: bytes | None = None,
    ) -> None:
        self.url = url
        self.final_url = final_url or url
        self.status = status
        self.headers = headers or []
        self.content_type = content_type
        self.depth = depth
        self.route = route  # a spider's callback and data for this page (extract/routing.py), "" for none
        self._raw = text  # UTF-8 bytes are decoded only if something reads ``text`` (CSS rules on the tree do not)
        self._tree = tree
        self._body = body  # the payload as received, decoded from its Content-Encoding only (None: text's bytes)

    @cached_property
    def data(self) -> dict[str, Any]:
        """The data the page's link was followed with (a spider's ``Follow(data=...)``, a rule's ``data``)."""
        return decode_route(self.route)[1]

    @cached_property
    def text(self) -> str:
        raw = self._raw
        return raw if isinstance(raw, str) else raw.decode("utf-8", "replace")

    @property
    def body(self) -> bytes:
        """The page's bytes in its own charset (a rendered page's: its DOM's UTF-8), its Content-Encoding undone."""
        if self._body is not None:
            return self._body
        raw = self._raw
        return raw if isinstance(raw, bytes) else raw.encode()

    @property
    def tree(self) -> LexborHTMLParser:
        if self._tree is None:
            self._tree = LexborHTMLParser(self._raw)
        return self._tree

    @cached_property
    def is_xml(self) -> bool:
        return _XML.search(self.content_type) is not None

    @cached_property
    def selector(self) -> Selector:
        kind = "xml" if self.is_xml else "html"
        raw = self._raw
        if isinstance(raw, bytes) and raw and "text" not in self.__dict__:
            # lxml reads the UTF-8 lexbor parsed: no decoding to str for parsel to encode back (~8% of a parse)
            return Selector(body=raw, encoding="utf-8", type=kind, base_url=self.final_url)
        return Selector(text=self.text or "<html></html>", type=kind, base_url=self.final_url)

    @cached_property
    def meta(self) -> dict[str, str]:
        """``<meta name|property|itemprop=... content=...>``: the first content of each name (names lower-case)."""
        out: dict[str, str] = {}
        for node in self.tree.css("meta[content]"):
            attrs = node.attributes
            content = attrs.get("content")
            if content is None:
                continue
            for key in ("name", "property", "itemprop", "http-equiv"):
                name = attrs.get(key)
                if name:
                    out.setdefault(name.strip().lower(), content.strip())
        return out

    @cached_property
    def jsonld(self) -> list[dict[str, Any]]:
        """Every JSON-LD object of the page, ``@graph`` members flattened in; blocks that do not parse are skipped."""
        found: list[dict[str, Any]] = []
        for node in self.tree.css('script[type="application/ld+json"]'):
            try:
                data = json.loads(node.text(deep=True) or "null", strict=False)
            except ValueError:
                continue
            _flatten(data, found)
        return found

    @cached_property
    def language(self) -> str:
        node = self.tree.css_first("html")
        lang = node.attributes.get("lang") if node is not None else None
        return (lang or self.meta.get("content-language", "")).strip().split(",")[0][:16]


def _flatten(data: Any, out: list[dict[str, Any]]) -> None:
    if isinstance(data, list):
        for item in data:
            _flatten(item, out)
    elif isinstance(data, dict):
        out.append(data)
        graph = data.get("@graph")
        if graph is not None:
            _flatten(graph, out)
