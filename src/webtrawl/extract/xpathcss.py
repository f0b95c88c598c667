"""The common XPath forms of a rules file as CSS, so they run on the lexbor tree the parser built (no lxml parse).

An absolute location path of element steps (``//div/h2``, ``/html/body``, ``*``), each with attribute predicates
(``[@id]``, ``[@class='x']``, ``[contains(@class, 'x')]``, ``[starts-with(@href, 'x')]``), ending in an element, in
``/text()`` or ``//text()`` (text nodes, as ``::text`` and `` ::text``) or ``/@name`` (``::attr(name)``). Names must
be lower-case, as lxml's HTML parser stores them (an upper-case XPath name matches nothing there). Values are
compared case-sensitively (CSS's ``s`` flag), as XPath does: HTML's CSS matches the values of ``type``, ``rel``,
``lang``, ``dir`` and a few more in any case. Anything else
(positions, functions, axes, relative paths, unions, ``tbody`` and ``table/tr``, which differ between the two
trees) returns None: parsel runs it on lxml as before.
"""

from __future__ import annotations

import re

_NAME = r"[a-z][a-z0-9_-]*"
_STEP = re.compile(rf"(//?)({_NAME}|\*)((?:\[[^\[\]]*\])*)")
_PREDICATE = re.compile(r"\[([^\[\]]*)\]")
_VALUE = r"""(?:'([^']*)'|"([^"]*)")"""
_HAS = re.compile(rf"\s*@({_NAME})\s*")
_EQUALS = re.compile(rf"\s*@({_NAME})\s*=\s*{_VALUE}\s*")
_FUNCTION = re.compile(rf"\s*(contains|starts-with)\(\s*@({_NAME})\s*,\s*{_VALUE}\s*\)\s*")
_OPERATOR = {"contains": "*=", "starts-with": "^="}
_TAIL = re.compile(rf"(//?)(?:text\(\)|@({_NAME}))$")


def xpath_as_css(expr: str) -> tuple[str, str, str] | None:
    """(css, mode, attr) as :func:`~webtrawl.extract.select.split_pseudo` gives them, or None."""
    expr = expr.strip()
    mode, attr = "html", ""
    tail = _TAIL.search(expr)
    if tail is not None:
        if tail.group(2):
            if tail.group(1) == "//":
                return None  # //@href: the attributes of every descendant
            mode, attr = "attr", tail.group(2)
        else:
            mode = "alltext" if tail.group(1) == "//" else "text"
        expr = expr[: tail.start()]
    parts: list[str] = []
    pos, previous = 0, ""
    while pos < len(expr):
        step = _STEP.match(expr, pos)
        if step is None:
            return None
        axis, name, predicates = step.groups()
        if not parts and axis == "/" and name != "html":
            return None  # /body: the root element is html, nothing else matches
        if name == "tbody" or (name == "tr" and axis == "/" and previous == "table"):
            return None  # lxml inserts no <tbody> (//table/tr matches there), lexbor always does
        conditions = [_condition(p) for p in _PREDICATE.findall(predicates)]
        if None in conditions:
            return None
        parts.append(("" if not parts else " > " if axis == "/" else " ") + name + "".join(map(str, conditions)))
        pos = step.end()
        previous = name
    return ("".join(parts), mode, attr) if parts else None


def _condition(predicate: str) -> str | None:
    if m := _HAS.fullmatch(predicate):
        return f"[{m.group(1)}]"
    if m := _EQUALS.fullmatch(predicate):
        return f"[{m.group(1)}={_quoted(_value(m, 2))} s]"
    if m := _FUNCTION.fullmatch(predicate):
        value = _value(m, 3)
        return f"[{m.group(2)}{_OPERATOR[m.group(1)]}{_quoted(value)} s]" if value else None  # '' matches all
    return None


def _value(m: re.Match[str], group: int) -> str:
    found = m.group(group)
    return found if found is not None else m.group(group + 1)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
