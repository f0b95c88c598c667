"""Scrapy-style selectors for callbacks, run on the lexbor tree the parser already built (no second parse).

``Page.css()`` returns a parsel ``SelectorList`` of :class:`LexborSelector` items that answer as parsel's do:
``.get()``, ``.getall()``, ``.re()``, ``.re_first()``, ``.attrib``, ``.jmespath()``, nested ``.css()`` (the rest of
parsel's Selector, ``.root`` and such, from the same result in parsel's tree), and the pseudo-elements
``::text`` (the element's own text nodes; ``h1 ::text``, ``*::text`` or a bare ``::text``: every text node below
it) and ``::attr(name)``. An element's ``.get()`` is its HTML as lexbor serializes it. ``xpath()`` runs there too
for the absolute paths extract/xpathcss.py translates. What lexbor cannot run (CSS it does not compile, other XPath,
CSS on a text or attribute result) goes to parsel (lxml) on the same element, found again by the same chain of
queries: the page is parsed a second time only then.
"""

from __future__ import annotations

from functools import lru_cache
from re import Pattern
from typing import Any

from parsel import Selector, SelectorList
from parsel.utils import extract_regex

from webtrawl.extract.document import Document
from webtrawl.extract.select import lexbor_compiles, split_pseudo, text_nodes
from webtrawl.extract.xpathcss import xpath_as_css

Found = SelectorList[Any]


@lru_cache(maxsize=512)
def _compiled(query: str) -> tuple[str, str, str] | None:
    """(css, mode, attr) of a query lexbor can run, None for one parsel must run (a callback's queries repeat)."""
    try:
        css, mode, attr = split_pseudo(query)
    except ValueError:
        return None
    return (css, mode, attr) if not css or lexbor_compiles(css) else None


@lru_cache(maxsize=512)
def _compiled_xpath(query: str) -> tuple[str, str, str] | None:
    """The same for an XPath that has a lexbor form (an absolute path: it searches from the page's root)."""
    found = xpath_as_css(query)
    return found if found is not None and lexbor_compiles(found[0]) else None


def page_css(doc: Document, query: str) -> Found:
    """``query`` on the whole page: on lexbor's tree when it can run there, else on parsel's."""
    compiled = _compiled(query)
    if compiled is None or not compiled[0] or doc.is_xml:
        return doc.selector.css(query)
    return _run(doc, doc.tree, compiled, None, query)


def page_xpath(doc: Document, query: str, **variables: Any) -> Found:
    """``query`` on the whole page: on lexbor's tree when it is a path it can run, else on parsel's."""
    compiled = None if variables or doc.is_xml else _compiled_xpath(query)
    if compiled is None:
        return doc.selector.xpath(query, **variables)
    return _run(doc, doc.tree, compiled, None, query, xpath=True)


class _Query:
    """What the results of one query share: how parsel finds each again (see ``LexborSelector._parsel``)."""

    __slots__ = ("doc", "parent", "query", "xpath")

    def __init__(self, doc: Document, parent: LexborSelector | None, query: str, xpath: bool) -> None:
        self.doc = doc
        self.parent = parent
        self.query = query
        self.xpath = xpath


class LexborSelector:
    """One result: an element (``node``) or a string (``value``: a text node or an attribute's value), the
    ``index``-th of its query's."""

    __slots__ = ("_index", "_node", "_of", "_value")

    def __init__(self, of: _Query, node: Any, value: str | None, index: int) -> None:
        self._of = of
        self._node = node
        self._value = value
        self._index = index

    @property
    def _doc(self) -> Document:
        return self._of.doc

    def css(self, query: str) -> Found:
        compiled = _compiled(query)
        if compiled is None or self._value is not None or self._doc.is_xml:
            return self._parsel().css(query)
        return _run(self._doc, self._node, compiled, self, query)

    def xpath(self, query: str, namespaces: Any = None, **variables: Any) -> Found:
        if namespaces is None and not variables and not self._doc.is_xml:
            compiled = _compiled_xpath(query)
            if compiled is not None:  # an absolute path: lxml too searches it from the page's root
                return _run(self._doc, self._doc.tree, compiled, None, query, xpath=True)
        return self._parsel().xpath(query, namespaces=namespaces, **variables)

    def get(self) -> str:
        return self._value if self._value is not None else str(self._node.html or "")

    def getall(self) -> list[str]:
        return [self.get()]

    extract = get

    def re(self, regex: str | Pattern[str], replace_entities: bool = True) -> list[str]:
        return extract_regex(regex, self.get(), replace_entities=replace_entities)

    def re_first(
        self, regex: str | Pattern[str], default: str | None = None, replace_entities: bool = True
    ) -> str | None:
        return next(iter(self.re(regex, replace_entities=replace_entities)), default)

    @property
    def attrib(self) -> dict[str, str]:
        if self._value is not None:
            return {}
        return {name: value or "" for name, value in self._node.attributes.items()}

    type = "html"  # an XML page never gets here: parsel runs its queries

    def jmespath(self, query: str, **kwargs: Any) -> Found:
        """JSON in a text result (``script#data::text``) queried as parsel does, without parsing the page again."""
        if self._value is not None:
            return Selector(root=self._value, type="html").jmespath(query, **kwargs)  # parsel's own text result
        return self._parsel().jmespath(query, **kwargs)

    def __getattr__(self, name: str) -> Any:
        """The rest of parsel's Selector (``root``, ``namespaces``...): the same result's, in parsel's tree."""
        if name.startswith("_"):
            raise AttributeError(name)
        if name in ("drop", "remove"):
            raise AttributeError(f"{name}(): a callback's page is read-only (the crawler stores it as fetched)")
        return getattr(self._parsel(), name)

    def _parsel(self) -> Selector:
        """The same result in parsel's tree; the element's own HTML parsed alone if lxml's tree differs there."""
        of = self._of
        base: Any = of.doc.selector if of.parent is None else of.parent._parsel()
        found = base.xpath(of.query) if of.xpath else base.css(of.query)
        if self._index < len(found):
            return found[self._index]  # type: ignore[no-any-return]
        return Selector(text=self.get())

    def __str__(self) -> str:
        return self.get()

    def __repr__(self) -> str:
        return f"<LexborSelector query={self._of.query!r} data={self.get()[:40]!r}>"


def _run(
    doc: Document,
    root: Any,
    compiled: tuple[str, str, str],
    parent: LexborSelector | None,
    query: str,
    xpath: bool = False,
) -> Found:
    css, mode, attr = compiled
    nodes = root.css(css) if css else [root]
    of = _Query(doc, parent, query, xpath)
    out: list[LexborSelector] = []
    if mode == "text" or mode == "alltext":
        for i, (node, text) in enumerate(text_nodes(nodes, mode == "alltext")):
            out.append(LexborSelector(of, node, text, i))
    elif mode == "html":
        out = [LexborSelector(of, node, None, i) for i, node in enumerate(nodes)]
    else:
        for node in nodes:
            # one lookup on the lazy view (a dict of all the element's attributes costs more); a valueless
            # attribute (``<a href>``) is None there, a missing one the default
            value = node.attrs.get(attr, _MISSING)
            if value is not _MISSING:
                out.append(LexborSelector(of, node, value or "", len(out)))
    return SelectorList(out)


_MISSING = object()
