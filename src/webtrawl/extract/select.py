"""Selectors of the rules file: ``css:`` (with Scrapy's ``::text`` / ``::attr(name)``), ``xpath:``, ``re:``,
``jsonld:<path>``, ``meta:<name>`` and ``data:<name>`` (a value of the data the page's link carried, see a rule's
``data``), compiled once when the rules are loaded and run on a :class:`Document`.

CSS runs on the lexbor tree the parser already built (no second parse) whenever lexbor compiles the selector, and
so do the common absolute XPath paths (``//h1/text()``, ``//meta[@name='x']/@content``: see extract/xpathcss.py);
otherwise the page is parsed once more by lxml through parsel. Both give the same strings: text
nodes one by one (``h1::text``: the element's own text nodes, ``h1 ::text``: all text below it), attribute values,
or the element's outer HTML; values are stripped and empty ones skipped. Note that lexbor builds the tree as browsers
do (an HTML5 parser: ``<tbody>`` inserted into tables), lxml does not; CSS selectors copied from a browser's
developer tools therefore match as they do there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cssselect import SelectorError
from parsel import Selector
from parsel.csstranslator import HTMLTranslator
from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from webtrawl.extract.document import Document
from webtrawl.extract.xpathcss import xpath_as_css

KINDS = ("css", "xpath", "re", "jsonld", "meta", "data")
_PSEUDO = re.compile(r"^(.*?)(\s*)::(text|attr\(\s*([^)\s]+)\s*\))\s*$", re.DOTALL)
_PROBE = LexborHTMLParser("<html><body><p>probe</p></body></html>")
_TRANSLATOR = HTMLTranslator()
Scope = Any  # a LexborNode / LexborHTMLParser (lexbor engine) or a parsel Selector (parsel engine)


class SelectorProblem(ValueError):
    """A selector that does not compile: the message says why (the rules loader adds file and line)."""


def lexbor_compiles(css: str) -> bool:
    try:
        _PROBE.css(css)
    except (SelectolaxError, ValueError):
        return False
    return True


@dataclass(slots=True)
class Select:
    """One compiled selector. ``engine`` is ``lexbor`` or ``parsel`` for css/xpath, ``page`` for the others."""

    kind: str
    expr: str
    engine: str = "page"
    css: str = ""  # the CSS part without its pseudo-element (lexbor engine)
    mode: str = "html"  # html | text | alltext | attr
    attr: str = ""
    pattern: re.Pattern[str] | None = None
    path: tuple[str, ...] = ()

    @classmethod
    def parse(cls, spec: str, default_kind: str = "css") -> Select:
        kind, sep, expr = spec.partition(":")
        if not sep or kind not in KINDS:
            kind, expr = default_kind, spec
        expr = expr.strip()
        if not expr and kind != "css":
            raise SelectorProblem(f"empty {kind} selector")
        if kind == "css":
            return _css(expr)
        if kind == "xpath":
            try:
                Selector(text="<p></p>").xpath(expr)
            except ValueError as exc:  # parsel raises ValueError("XPath error: ...")
                raise SelectorProblem(f"xpath {expr!r} does not compile: {exc}") from None
            as_css = xpath_as_css(expr)
            if as_css is not None and lexbor_compiles(as_css[0]):
                css, mode, attr = as_css
                return cls("xpath", expr, engine="lexbor", css=css, mode=mode, attr=attr)
            return cls("xpath", expr, engine="parsel")
        if kind == "re":
            try:
                return cls("re", expr, pattern=re.compile(expr))
            except re.error as exc:
                raise SelectorProblem(f"regex {expr!r} does not compile: {exc}") from None
        if kind == "jsonld":
            return cls("jsonld", expr, path=tuple(p for p in expr.replace("/", ".").split(".") if p))
        if kind == "data":
            return cls("data", expr)
        return cls("meta", expr.lower())

    def nodes(self, doc: Document, scope: Scope | None) -> list[Any]:
        """Elements this selector picks (for ``items`` and ``follow``)."""
        if self.engine == "lexbor":
            root = self._root(doc, scope)
            return list(root.css(self.css)) if self.css else [root]
        root = scope if scope is not None else doc.selector
        return list(root.xpath(self.expr) if self.kind == "xpath" else root.css(self.expr))

    def _root(self, doc: Document, scope: Scope | None) -> Any:
        """Where a lexbor query starts: the scope (an item), but the page for XPath (only absolute paths run here,
        and lxml searches those from the page's root whatever the context node)."""
        return doc.tree if scope is None or self.kind == "xpath" else scope

    def values(self, doc: Document, scope: Scope | None, first: bool) -> list[Any]:
        """The values this selector finds in ``scope`` (the page if None); only the first if ``first``."""
        if self.engine == "lexbor":
            return _lexbor_values(self, self._root(doc, scope), first)
        if self.engine == "parsel":
            root = scope if scope is not None else doc.selector
            found = root.xpath(self.expr) if self.kind == "xpath" else root.css(self.expr)
            return _clean(found.getall(), first)
        if self.kind == "re":
            assert self.pattern is not None
            text = doc.text if scope is None else _html_of(scope)
            matches = [self.pattern.search(text)] if first else list(self.pattern.finditer(text))
            return [m.group(1) if self.pattern.groups else m.group(0) for m in matches if m]
        if self.kind == "meta":
            value = doc.meta.get(self.expr)
            return [value] if value else []
        if self.kind == "data":
            value = doc.data.get(self.expr)
            return [] if value is None else [value]
        return _jsonld(doc.jsonld, self.path, first)


def split_pseudo(expr: str) -> tuple[str, str, str]:
    """(css, mode, attr) of a CSS query with Scrapy's pseudo-elements: mode ``html`` (the elements), ``text``
    (``h1::text``: their own text nodes), ``alltext`` (``h1 ::text``, or a bare ``::text`` as parsel reads it:
    every text node below them) or ``attr`` (``::attr(name)``, lower-cased)."""
    m = _PSEUDO.match(expr)
    if not m:
        if not expr:
            raise SelectorProblem("empty css selector")
        return expr, "html", ""
    css = m.group(1).strip()
    if m.group(4):
        return css, "attr", m.group(4).lower()
    return css, ("alltext" if m.group(2) or not css else "text"), ""


def _css(expr: str) -> Select:
    css, mode, attr = split_pseudo(expr)
    if not css or lexbor_compiles(css):
        return Select("css", expr, engine="lexbor", css=css, mode=mode, attr=attr)
    try:
        _TRANSLATOR.css_to_xpath(expr)
    except SelectorError as exc:
        raise SelectorProblem(f"css {expr!r} does not compile: {exc}") from None
    return Select("css", expr, engine="parsel")


def _clean(values: list[str], first: bool) -> list[Any]:
    out = []
    for value in values:
        value = value.strip()
        if value:
            out.append(value)
            if first:
                break
    return out


def _lexbor_values(sel: Select, root: Any, first: bool) -> list[Any]:
    if first and sel.css:
        # css_first stops at the first match (a full query walks the whole tree): most first-value fields end here
        node = root.css_first(sel.css)
        if node is None:
            return []
        found = _node_values(sel, node, True)
        if found:
            return found
    nodes = root.css(sel.css) if sel.css else [_element(root)]
    if sel.mode == "text" or sel.mode == "alltext":
        return _clean([text for _, text in text_nodes(nodes, sel.mode == "alltext")], first)
    out: list[Any] = []
    for node in nodes:
        out += _node_values(sel, node, first)
        if first and out:
            break
    return out


def _element(root: Any) -> Any:
    """The page's root element for a bare pseudo-element (``::text``), a scope's own element otherwise."""
    return root.root if isinstance(root, LexborHTMLParser) else root


def _node_values(sel: Select, node: Any, first: bool) -> list[Any]:
    if sel.mode == "attr":
        value = node.attributes.get(sel.attr)
        raw = [value] if value is not None else []
    elif sel.mode == "html":
        raw = [node.html or ""]
    else:
        walk = node.traverse(include_text=True) if sel.mode == "alltext" else node.iter(include_text=True)
        raw = [n.text_content or "" for n in walk if n.tag == "-text"]
    return _clean(raw, first)


def text_nodes(nodes: list[Any], deep: bool) -> list[tuple[Any, str]]:
    """The text nodes of ``nodes`` (their children, or with ``deep`` all below them) as parsel gives them: an XPath
    node-set, so when matches nest (``span::text`` on ``<span>a<span>b</span>c</span>``) in document order, once."""
    matched = {node.mem_id for node in nodes} if len(nodes) > 1 else set()
    clear: set[int] = set()
    tops = [node for node in nodes if not _nested(node, matched, clear)] if matched else nodes
    nested = len(tops) < len(nodes)
    out = []
    for top in tops:
        walk = top.traverse(include_text=True) if deep or nested else top.iter(include_text=True)
        for node in walk:
            if node.tag == "-text" and (deep or not nested or node.parent.mem_id in matched):
                out.append((top, node.text_content or ""))
    return out


def _nested(node: Any, matched: set[int], clear: set[int]) -> bool:
    """Whether an ancestor of ``node`` is among the ``matched`` nodes. ``clear`` holds ancestors already known to
    have none matched above or at them, so the walks of all the matches together visit each ancestor once."""
    walked = []
    parent = node.parent
    while parent is not None:
        mem_id = parent.mem_id
        if mem_id in matched:
            return True
        if mem_id in clear:
            break
        walked.append(mem_id)
        parent = parent.parent
    clear.update(walked)
    return False


def _html_of(scope: Any) -> str:
    if isinstance(scope, LexborNode):
        return scope.html or ""
    if isinstance(scope, Selector):
        return str(scope.get())
    return str(scope.html or "")


def _jsonld(objects: list[dict[str, Any]], path: tuple[str, ...], first: bool) -> list[Any]:
    """Values at ``path`` (dot-separated keys, or a position in a list: ``offers.0.price``; a leading ``Type`` picks
    objects of that ``@type``)."""
    if path and not any(path[0] in obj for obj in objects):
        wanted = path[0]
        typed = [o for o in objects if wanted == o.get("@type") or wanted in (o.get("@type") or [])]
        if typed:
            objects, path = typed, path[1:]
    out: list[Any] = []
    for obj in objects:
        current: list[Any] = [obj]
        for key in path:
            step: list[Any] = []
            for value in current:
                if isinstance(value, list) and key.isdigit():  # a position: that member of the list
                    step.extend(value[int(key) : int(key) + 1])
                    continue
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, dict) and key in v:
                        step.append(v[key])
            current = step
        for value in current:
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str):
                    v = v.strip()
                if v not in (None, "", [], {}):
                    out.append(v)
        if first and out:
            return out[:1]
    return out
