"""Selectors of the rules file: ``css:`` (with Scrapy's ``::text`` / ``::attr(name)``), ``xpath:``, ``re:``,
``jsonld:<path>``, ``meta:<name>`` and ``data:<name>`` (a value of the data the page's link carried, see a rule's
``data``), compiled once when the rules are loaded and run on a :class:`Document`.

CSS runs on the lexbor tree the parser already built (no second parse) whenever lexbor compiles the selector;
otherwise, and for XPath, the page is parsed once more by lxml through parsel. Both give the same strings: text
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
            root = scope if scope is not None else doc.tree
            return list(root.css(self.css)) if self.css else [root]
        root = scope if scope is not None else doc.selector
        return list(root.xpath(self.expr) if self.kind == "xpath" else root.css(self.expr))

    def values(self, doc: Document, scope: Scope | None, first: bool) -> list[Any]:
        """The values this selector finds in ``scope`` (the page if None); only the first if ``first``."""
        if self.engine == "lexbor":
            return _lexbor_values(self, scope if scope is not None else doc.tree, first)
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


def _css(expr: str) -> Select:
    m = _PSEUDO.match(expr)
    css, mode, attr = expr, "html", ""
    if m:
        css = m.group(1).strip()
        mode = "attr" if m.group(4) else ("alltext" if m.group(2) and css else "text")
        attr = (m.group(4) or "").lower()
    if not css and not m:
        raise SelectorProblem("empty css selector")
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
    nodes = root.css(sel.css) if sel.css else [root]
    out: list[Any] = []
    for node in nodes:
        out += _node_values(sel, node, first)
        if first and out:
            break
    return out


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


def _html_of(scope: Any) -> str:
    if isinstance(scope, LexborNode):
        return scope.html or ""
    if isinstance(scope, Selector):
        return str(scope.get())
    return str(scope.html or "")


def _jsonld(objects: list[dict[str, Any]], path: tuple[str, ...], first: bool) -> list[Any]:
    """Values at ``path`` (dot-separated keys; a leading ``Type`` picks objects of that ``@type``)."""
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
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, dict) and key in v:
                        step.append(v[key])
                    elif isinstance(v, list) and key.isdigit() and int(key) < len(v):
                        step.append(v[int(key)])
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
