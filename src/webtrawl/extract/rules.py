"""The rules file (``--extract rules.toml``): rule blocks chosen by URL, each with fields to extract.

```toml
[[rule]]
url = 'books\\.example/catalogue/'     # regex, searched in the URL (first matching rule wins)
content_type = "html"                  # optional regex, searched in the page's MIME type
items = "css:article.product"          # optional: one item per element (fields relative to it); default: one
follow = "css:a.next"                  # optional: follow only these links; false: none; default: all links
required = ["name"]                    # optional: an item without these fields is not emitted
headers = { "X-Api-Key" = "k" }        # optional: extra request headers for URLs this rule's url matches
priority = 0                           # optional: the links this rule follows go first (0) .. last (3)
recrawl_after = "1h"                   # optional: with --recrawl-after, this rule's pages are due after this
data = { category = "css:h1::text" }   # optional: handed to the pages of the links this rule follows
[rule.fields]
name = "css:h1::text"                  # shorthand: css: xpath: re: jsonld: meta: (no prefix: css)
price = { css = "p.price::text", type = "float", re = '[\\d.]+' }
tags = { css = "a.tag::text", all = true }
published = { jsonld = "datePublished", type = "date" }
author = { meta = "author", default = "unknown" }
category = "data:category"             # a value of the data the page's link carried
```

``data`` is the routing of spiders (``webtrawl.extract.routing``) for rules: its selectors run on the page (first
value each) and the links the rule follows carry the result, merged over the data the page itself was reached with
(so pagination keeps it); a ``data:<name>`` field of the next page's rule reads it.

An item is emitted when at least one field found a value. Problems (TOML, unknown keys, bad regex, selectors that do
not compile) raise :class:`InputError` naming the file and line.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webtrawl.errors import ConfigError, InputError
from webtrawl.extract.base import ExtractResult, check_priority
from webtrawl.extract.convert import TYPES, convert, refine
from webtrawl.extract.document import Document
from webtrawl.extract.routing import encode_route
from webtrawl.extract.select import KINDS, Select, SelectorProblem
from webtrawl.values import parse_duration, parse_headers

_RULE_KEYS = {"url", "content_type", "items", "follow", "required", "fields", "name", "headers"}
_RULE_KEYS |= {"priority", "recrawl_after"}  # scheduling: the rank of the links it follows, its pages' recrawl
_RULE_KEYS |= {"data"}  # routing: what the links it follows carry to their pages
_FIELD_KEYS = {*KINDS, "all", "type", "default"}
_MISSING = object()


@dataclass(slots=True)
class FieldRule:
    name: str
    select: Select
    all: bool = False
    kind: str = "str"
    default: Any = None
    refine: re.Pattern[str] | None = None

    def value(self, doc: Document, scope: Any) -> tuple[Any, bool]:
        """(value, found): the default (and False) when nothing was found or nothing converted."""
        found = self.select.values(doc, scope, first=not self.all and self.refine is None)
        if self.refine is not None:
            found = refine([str(v) for v in found], self.refine)
        if self.kind != "str" or self.select.kind == "jsonld":
            found = [v for v in (convert(v, self.kind) if self.kind != "str" else v for v in found) if v is not None]
        if self.all:
            return (found, True) if found else (self.default if self.default is not None else [], False)
        return (found[0], True) if found else (self.default, False)


@dataclass(slots=True)
class Rule:
    url: re.Pattern[str]
    fields: list[FieldRule]
    content_type: re.Pattern[str] | None = None
    items: Select | None = None
    follow: Select | None = None
    follow_none: bool = False
    required: list[str] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)  # sent by the fetcher (extract/hints.py), not used here
    engine: str = "lexbor"  # parsel when any selector needs lxml: then items and fields all run there
    priority: int = -1  # the level of the links this rule follows (-1: by depth)
    recrawl_after: float = 0.0  # seconds; 0: --recrawl-after
    data: dict[str, Select] = field(default_factory=dict)  # name -> selector: data for the links it follows

    def matches(self, doc: Document) -> bool:
        return self.matches_url(doc.url, doc.content_type)

    def matches_url(self, url: str, content_type: str) -> bool:
        """``content_type`` "" (not known, e.g. a 304) matches any content_type regex."""
        if not self.url.search(url):
            return False
        return self.content_type is None or not content_type or bool(self.content_type.search(content_type))


class RulesExtractor:
    """A rules file's extractor; also :class:`~webtrawl.extract.base.RequestHints` (its rules' headers, and for
    ``--render auto`` whether the page's rule finds an item) and :class:`~webtrawl.extract.base.RecrawlHints`."""

    def __init__(self, path: Path, rules: list[Rule]) -> None:
        self.name = str(path)
        self.rules = rules
        self.sets_recrawl = any(rule.recrawl_after for rule in rules)
        self._headers = [(rule.url, rule.headers) for rule in rules if rule.headers]
        self.sends_headers = bool(self._headers)

    def headers_for(self, url: str) -> dict[str, str]:
        """Every matching rule adds its headers, an earlier rule's value winning for a name given twice."""
        out: dict[str, str] = {}
        for pattern, headers in self._headers:
            if pattern.search(url):
                for name, value in headers.items():
                    out.setdefault(name, value)
        return out

    def wants(self, url: str) -> bool:
        return any(rule.url.search(url) for rule in self.rules)

    def finds_no_items(self, doc: Document) -> bool:
        """The page's rule (the one the parser would run) yields no item; False if no rule is for the page."""
        return self.rule_for(doc) is not None and not self.extract(doc).items

    def rule_for(self, doc: Document) -> Rule | None:
        """The rule for ``doc``: the first that matches it."""
        return next((r for r in self.rules if r.matches(doc)), None)

    def extract(self, doc: Document) -> ExtractResult:
        rule = self.rule_for(doc)
        if rule is None:
            return ExtractResult()
        scopes: list[Any] = [None] if rule.items is None else rule.items.nodes(doc, None)
        items = []
        for scope in scopes:
            item: dict[str, Any] = {}
            any_found = False
            for f in rule.fields:
                value, found = f.value(doc, scope)
                item[f.name] = value
                any_found |= found
            if any_found and all(item.get(name) not in (None, []) for name in rule.required):
                items.append(item)
        result = ExtractResult(items=items, link_priority=rule.priority)
        if rule.data:
            result.link_route = _carried(rule, doc)
        if rule.follow_none:
            result.links = []
        elif rule.follow is not None:
            result.links = _hrefs(rule.follow, doc)
        return result

    def recrawl_after(self, url: str, content_type: str) -> float:
        """The recrawl interval (s) of the first rule matching the page, 0 if that rule sets none (or none matches)."""
        rule = next((r for r in self.rules if r.matches_url(url, content_type)), None)
        return rule.recrawl_after if rule is not None else 0.0


def _carried(rule: Rule, doc: Document) -> str:
    """The route of the links a rule with ``data`` follows: the page's own data, updated with what it found."""
    data = dict(doc.data)
    for name, select in rule.data.items():
        found = select.values(doc, None, first=True)
        if found:
            data[name] = found[0]
    return encode_route(None, data)


def _hrefs(select: Select, doc: Document) -> list[str]:
    if select.engine == "lexbor":
        if select.mode == "attr":
            return select.values(doc, None, first=False)
        return [h for n in select.nodes(doc, None) if (h := n.attributes.get("href"))]
    out = []
    for node in select.nodes(doc, None):
        # an attribute or text node (xpath //a/@href) is the URL; an element gives its href (an <a> without
        # attributes has none: its HTML is no URL)
        value = node.root if isinstance(node.root, str) else node.attrib.get("href")
        if value:
            out.append(str(value).strip())
    return out


def load_rules(path: Path) -> RulesExtractor:
    if path.suffix == ".py":  # the user's code, not rules: it is named with the function or class to run
        raise InputError(f"{path} is Python, not a rules file: name the function or class to run, as {path}:parse")
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read rules file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text") from None
    try:
        data = tomllib.loads(source)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+)", str(exc))
        line = m.group(1) if m else str(max(1, len(source.splitlines())))  # "at end of document"
        where = f"{path}:{line}"
        raise InputError(f"{where}: not valid TOML: {exc}") from None
    lines = _Lines(path, source)
    unknown = set(data) - {"rule"}
    if unknown:
        raise lines.error(0, sorted(unknown)[0], f"unknown top-level key {sorted(unknown)[0]!r} (rules go in [[rule]])")
    blocks = data.get("rule")
    if not isinstance(blocks, list) or not blocks:
        raise InputError(f"{path}: no [[rule]] blocks")
    return RulesExtractor(path, [_rule(i, block, lines) for i, block in enumerate(blocks)])


def _rule(index: int, block: Any, lines: _Lines) -> Rule:
    if not isinstance(block, dict):
        raise lines.error(index, None, "a rule must be a table")
    unknown = set(block) - _RULE_KEYS
    if unknown:
        key = sorted(unknown)[0]
        raise lines.error(index, key, f"unknown key {key!r} (allowed: {', '.join(sorted(_RULE_KEYS))})")
    if not isinstance(block.get("url"), str):
        raise lines.error(index, "url", "every rule needs url = '<regex>'")
    rule = Rule(url=_regex(block["url"], index, "url", lines), fields=[])
    if "content_type" in block:
        rule.content_type = _regex(str(block["content_type"]), index, "content_type", lines)
    if "items" in block:
        rule.items = _select(block["items"], index, "items", lines)
    follow = block.get("follow", True)
    if follow is False or follow in ("none", ""):
        rule.follow_none = True
    elif isinstance(follow, str):
        rule.follow = _select(follow, index, "follow", lines)
    elif follow is not True:
        raise lines.error(index, "follow", 'follow must be a selector ("css:a.next"), true or false')
    required = block.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise lines.error(index, "required", "required must be a list of field names")
    rule.required = required
    rule.headers = _headers(block.get("headers", {}), index, lines)
    if "priority" in block:
        try:
            rule.priority = check_priority(block["priority"])
        except ValueError as exc:
            raise lines.error(index, "priority", str(exc)) from None
    if "recrawl_after" in block:
        try:
            rule.recrawl_after = parse_duration(block["recrawl_after"])
        except ValueError as exc:
            raise lines.error(index, "recrawl_after", f"recrawl_after: {exc}") from None
        if rule.recrawl_after <= 0:
            raise lines.error(index, "recrawl_after", 'recrawl_after must be a duration above 0 ("1h", "90m")')
    data = block.get("data", {})
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise lines.error(index, "data", 'data must be a table of selectors: data = { category = "css:h1::text" }')
    rule.data = {name: _select(spec, index, "data", lines) for name, spec in data.items()}
    fields = block.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise lines.error(index, "fields", "every rule needs a [rule.fields] table with at least one field")
    rule.fields = [_field(name, spec, index, lines) for name, spec in fields.items()]
    missing = [r for r in required if r not in fields]
    if missing:
        raise lines.error(index, "required", f"required names no field: {', '.join(missing)}")
    selects = [f.select for f in rule.fields] + ([rule.items] if rule.items else []) + list(rule.data.values())
    if any(s.engine == "parsel" for s in selects):
        rule.engine = "parsel"
        for s in selects:
            if s.engine == "lexbor":  # one engine for a rule: its items scope and fields must be the same kind
                s.engine = "parsel"
    return rule


def _headers(table: Any, index: int, lines: _Lines) -> dict[str, str]:
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise lines.error(index, "headers", 'headers must be a table of strings: headers = { "X-Key" = "value" }')
    for name, value in table.items():
        if ":" in name or not _valid_header(name, value):
            raise lines.error(index, "headers", f"headers: not a valid header: {name} = {value!r}")
    return dict(table)


def _valid_header(name: str, value: str) -> bool:
    try:
        parse_headers([f"{name}: {value}"])
    except ConfigError:
        return False
    return True


def _field(name: str, spec: Any, index: int, lines: _Lines) -> FieldRule:
    if isinstance(spec, str):
        return FieldRule(name, _select(spec, index, name, lines, field=True))
    if not isinstance(spec, dict):
        raise lines.error(index, name, f"field {name!r} must be a selector string or a table", field=True)
    unknown = set(spec) - _FIELD_KEYS
    if unknown:
        key = sorted(unknown)[0]
        allowed = ", ".join(sorted(_FIELD_KEYS))
        raise lines.error(index, name, f"field {name!r}: unknown key {key!r} (allowed: {allowed})", field=True)
    sources = [k for k in KINDS if k in spec and not (k == "re" and len([s for s in KINDS if s in spec]) > 1)]
    if len(sources) != 1:
        raise lines.error(index, name, f"field {name!r} needs exactly one of {', '.join(KINDS)}", field=True)
    kind = sources[0]
    select = _select(f"{kind}:{spec[kind]}", index, name, lines, field=True)
    refine_re = None
    if kind != "re" and "re" in spec:
        refine_re = _regex(str(spec["re"]), index, name, lines, field=True)
    type_name = str(spec.get("type", "str"))
    if type_name not in TYPES:
        message = f"field {name!r}: type must be one of {', '.join(TYPES)}, not {type_name!r}"
        raise lines.error(index, name, message, field=True)
    all_values = spec.get("all", False)
    if not isinstance(all_values, bool):
        raise lines.error(index, name, f"field {name!r}: all must be true or false", field=True)
    return FieldRule(name, select, all_values, type_name, spec.get("default"), refine_re)


def _select(spec: Any, index: int, key: str, lines: _Lines, field: bool = False) -> Select:
    if not isinstance(spec, str):
        raise lines.error(index, key, f"{key}: a selector must be a string", field)
    if spec.startswith("css:") and spec.split(":", 1)[1].strip() in ("", "::text"):
        raise lines.error(index, key, f"{key}: empty css selector", field)
    try:
        return Select.parse(spec)
    except SelectorProblem as exc:
        raise lines.error(index, key, f"{key}: {exc}", field) from None


def _regex(text: str, index: int, key: str, lines: _Lines, field: bool = False) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise lines.error(index, key, f"{key}: regex {text!r} does not compile: {exc}", field) from None


class _Lines:
    """File and line of a rule's key for error messages (tomllib keeps no positions, so the text is searched)."""

    def __init__(self, path: Path, source: str) -> None:
        self.path = path
        self.lines = source.splitlines()
        self.starts = [i for i, line in enumerate(self.lines) if re.match(r"\s*\[\[\s*rule\s*\]\]", line)]

    def error(self, rule: int, key: str | None, message: str, field: bool = False) -> InputError:
        """``field``: ``key`` names a field, searched in the rule's fields (a field named ``url`` or ``name`` is
        not the rule's own key of that name)."""
        start = self.starts[rule] if rule < len(self.starts) else 0
        end = self.starts[rule + 1] if rule + 1 < len(self.starts) else len(self.lines)
        line = start
        if field:
            fields = (i for i in range(start, end) if _FIELDS_TABLE.match(self.lines[i]))
            start = next(fields, start)
        if key is not None:
            pattern = re.compile(rf"\s*(?:\[\s*rule\.fields\.)?[\"']?{re.escape(key)}[\"']?\s*(?:=|\])")
            line = next((i for i in range(start, end) if pattern.match(self.lines[i])), line)
        return InputError(f"{self.path}:{line + 1}: {message}")


_FIELDS_TABLE = re.compile(r"\s*\[\s*rule\s*\.\s*fields\s*[.\]]")  # [rule.fields] or [rule.fields.NAME]
