"""What a crawler needs from an HTML page: title, robots directives, canonical, base href and the raw links.

One lexbor parse and one CSS query that returns every element of interest in document order: a single pass
over the tree in C is much cheaper than one query per element kind, and the Python loop then only sees the
~150 elements that matter instead of the thousands a page has.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from webtrawl.formats.canonical import header_url

_MAX_DEPTH = 512  # Blink caps the DOM depth at 512 too; deeper nesting only serves to attack parsers
_TAG_RE = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^>]*>")
_TAG_RE_B = re.compile(rb"<(/?)([A-Za-z][A-Za-z0-9-]*)[^>]*>")
_END_TAG_B = re.compile(rb"</")
# Elements that never nest (void) and those we must never remove (they carry what we extract).
# Implicitly closed ones (p, li, td...) do not nest either.
_FLAT = frozenset(
    {
        *("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"),
        *("param", "keygen", "a", "title", "p", "li", "dt", "dd", "option", "td", "th", "tr"),
    }
)
# A start tag that can nest (not _FLAT), spanning what _TAG_RE would: counting these bounds the stack's depth.
_FLAT_NAMES = "|".join(sorted(_FLAT))
_NESTING = rf"<(?!(?:{_FLAT_NAMES})(?![A-Za-z0-9-]))[A-Za-z][A-Za-z0-9-]*[^>]*>"
_NESTING_RE = re.compile(_NESTING, re.I | re.A)
_NESTING_RE_B = re.compile(_NESTING.encode("ascii"), re.I)
_FEW_TAGS = 8192  # below this, even the worst nesting costs lexbor well under a second
# Up to this many '<' a page is parsed as it is (see _nesting_is_bounded).
_UNCOUNTED = 4096
# Every element of interest, in document order: a[href], area[href], base[href], link[rel][href],
# meta[name][content], meta[http-equiv], iframe/frame[src], the page's requisites (img, script... [src]), title.
# lexbor matches attribute selectors about twice as fast as type selectors, so the query asks by attribute (plus
# title) and the loop keeps the tags it wants (a few svg <use href> come along).
_QUERY = "[href], [src], [name][content], [http-equiv], title"
# <link rel> values whose target is another document worth crawling (the canonical copy, translations and feeds,
# the next page of a series), and those whose target is a requisite of this page (for replay in an archive).
_LINK_RELS = frozenset({"canonical", "alternate", "next", "prev", "previous"})
_REQUISITE_RELS = frozenset({"stylesheet", "icon", "shortcut", "apple-touch-icon", "preload", "modulepreload"})
_FRAMES = frozenset({"iframe", "frame"})
_REQUISITE_TAGS = frozenset({"img", "script", "embed", "source", "audio", "video", "track", "input"})


def _tag_ids(*names: str) -> tuple[int, ...]:
    """lexbor's ids of known tags: static in its tag table, the same in every document and namespace (an svg
    ``<a>`` is ``a`` too); a custom element's id is per document and never one of them."""
    doc = LexborHTMLParser("")
    return tuple(doc.create_node(name).tag_id for name in names)


# The loop dispatches on ``tag_id``, an int: ``tag`` builds a str from the element's name for every node.
_A, _AREA, _META, _LINK, _BASE, _TITLE, _INPUT = _tag_ids("a", "area", "meta", "link", "base", "title", "input")
_FRAME_IDS = frozenset(_tag_ids(*_FRAMES))
_REQUISITE_IDS = frozenset(_tag_ids(*_REQUISITE_TAGS))
# The delay and the ``url=`` before the target; the target is the rest. (One regex for both backtracked: a lazy
# target, a back-reference and a ``\s*$`` took O(n^2), 6 s for a 20 KB attribute of spaces.)
_REFRESH_HEAD_RE = re.compile(r"\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?", re.IGNORECASE)
_MAX_TITLE = 1000
_SPLIT_RE = re.compile(r"[\s,]+")
# Directives that take a value after a colon; any other "word:" in X-Robots-Tag names a user agent.
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


@dataclass(slots=True)
class Extracted:
    title: str = ""
    base: str = ""  # raw href of the first <base href>
    canonical: str = ""  # raw href of the first <link rel=canonical>
    robots: set[str] = field(default_factory=set)  # lower-case directives of meta robots / meta <token>
    links: list[tuple[str, bool]] = field(default_factory=list)  # (raw href, rel=nofollow)
    requisites: list[str] = field(default_factory=list)  # raw URLs of images, scripts, style sheets, icons
    tree: LexborHTMLParser | None = None  # the parsed page, for extraction (CSS rules run on it: no second parse)


def _directives(content: str) -> set[str]:
    found = {d for d in _SPLIT_RE.split(content.lower()) if d}
    if "none" in found:
        found |= {"noindex", "nofollow"}
    return found


def refresh_target(content: str) -> str:
    """The URL of a ``<meta http-equiv=refresh content="5; url=/next">``, or "" (a plain reload names none)."""
    head = _REFRESH_HEAD_RE.match(content)
    rest = content[head.end() if head else 0 :].strip()
    if len(rest) > 1 and rest[0] in "'\"" and rest[-1] == rest[0]:
        rest = rest[1:-1]
    target = rest.strip()
    return "" if target[:1].isdigit() and target.replace(".", "").isdigit() else target


def header_refresh(values: list[str] | None) -> list[tuple[str, bool]]:
    """The link a ``Refresh: 0; url=/next`` response header names (its values as received), as a ``<meta
    http-equiv=refresh>`` names one: browsers follow both, and a site that moves pages with the header alone left
    their targets unfound."""
    target = refresh_target(header_url(values[0])) if values else ""
    return [(target, False)] if target else []


def _nesting_is_bounded(html: bytes | str) -> bool:
    """At most :data:`_UNCOUNTED` tags, or few tags whose start tags outnumber their end tags by less than the cap
    (``<`` counts both, ``</`` end tags).

    The end-tag count is what the guard costs (~5% of a parser), and it bounds less than it seems: end tags that
    close nothing (``</span>`` under ``<div>``s) balance the count, so a page of :data:`_FEW_TAGS` tags already got
    through nested ~4,000 deep. A page of at most :data:`_UNCOUNTED` ``<`` cannot nest deeper than that either, so it
    skips the count: its worst case, that many nested ``<div>``, costs lexbor ~10 ms, about what the count let
    through and what a body cut at the size cap costs (RESULTS.md, 2026-12-03). For bytes the counts take the
    memchr-based routes, 2x faster than ``bytes.count``: deleting ``<`` counts it (``len`` before minus after) and
    the regex engine finds the literal ``</`` by its first byte.
    """
    if isinstance(html, str):
        tags = html.count("<")
        return tags <= _UNCOUNTED or (tags <= _FEW_TAGS and tags - 2 * html.count("</") <= _MAX_DEPTH)
    tags = len(html) - len(html.replace(b"<", b""))
    return tags <= _UNCOUNTED or (tags <= _FEW_TAGS and tags - 2 * len(_END_TAG_B.findall(html)) <= _MAX_DEPTH)


def _limit_depth(html: bytes | str) -> bytes | str:
    """Drop start tags nested deeper than ``_MAX_DEPTH`` (their text and links stay).

    lexbor's tree builder checks the stack of open elements for every tag, so 100k nested ``<div>`` cost it
    over a minute. A page with few tags, or whose start tags outnumber its end tags by less than the cap, cannot
    nest deep enough to matter, so almost every page pays only a count or two; the others get one regex pass that
    keeps a stack of open elements (an end tag closes up to its own start tag, as the parser does), unless a
    count of the start tags that can nest at all already shows it would drop nothing.
    """
    if _nesting_is_bounded(html):
        return html
    # Second test, still in C: the stack of _drop_deep only grows on start tags that can nest, so with no more of
    # them than the cap it drops nothing (pages whose scripts hold many '<' land here, not deep ones).
    nesting = _NESTING_RE if isinstance(html, str) else _NESTING_RE_B
    end = html.rfind(">") + 1 if isinstance(html, str) else html.rfind(b">") + 1  # as in _drop_deep
    if len(nesting.findall(html, 0, end)) <= _MAX_DEPTH:  # type: ignore[arg-type]
        return html
    return _drop_deep(html)


def _drop_deep(html: bytes | str) -> bytes | str:
    """The regex pass of :func:`_limit_depth`: a stack of open elements, start tags beyond the cap removed."""
    stack: list[str] = []
    open_count: dict[str, int] = {}

    def tag(m: re.Match[Any]) -> Any:
        raw = m.group(2)
        name = (raw.decode("ascii") if isinstance(raw, bytes) else raw).lower()
        if name in _FLAT:
            return m.group(0)
        if m.group(1):
            if open_count.get(name):
                while stack:
                    top = stack.pop()
                    open_count[top] -= 1
                    if top == name:
                        break
            return m.group(0)
        if len(stack) >= _MAX_DEPTH:
            return m.group(0)[:0]
        stack.append(name)
        open_count[name] = open_count.get(name, 0) + 1
        return m.group(0)

    # Only up to the last '>': past it no tag can end, and a regex searching there would scan to the end of the
    # page from every '<' in vain (O(n^2): 100 KB of "<a" took over a minute).
    if isinstance(html, str):
        end = html.rfind(">") + 1
        return _TAG_RE.sub(tag, html[:end]) + html[end:]
    end_b = html.rfind(b">") + 1
    return _TAG_RE_B.sub(tag, html[:end_b]) + html[end_b:]


def extract(html: bytes | str, product_token: str) -> Extracted:
    """Parse ``html`` (bytes are read as UTF-8) and collect what the crawler uses."""
    tree = LexborHTMLParser(_limit_depth(html))
    out = Extracted(tree=tree)
    robot_names = ("robots", product_token.lower())
    links = out.links
    requisites = out.requisites
    for node in tree.css(_QUERY):
        tag = node.tag_id
        if tag in (_A, _AREA):  # most of the nodes: first
            # The attributes dict beats two lookups on the lazy view: a missing ``rel`` raises KeyError inside it.
            # Keys are the parser's lower-case names, and it drops duplicates, so ``get`` finds what ``attrs`` would.
            attrs = node.attributes
            href = attrs.get("href")
            if href:
                rel = attrs.get("rel")
                links.append((href, rel is not None and "nofollow" in rel.lower().split()))
        elif tag in _REQUISITE_IDS:
            # One lookup on the lazy view: an <img> has ~5 attributes (srcset, sizes...) that a dict would decode.
            src = node.attrs.get("src")
            if src and (tag != _INPUT or (node.attributes.get("type") or "").lower() == "image"):
                requisites.append(src)
        elif tag == _META:
            attrs = node.attributes
            name = attrs.get("name")
            content = attrs.get("content")
            if name and content and name.strip().lower() in robot_names:
                out.robots |= _directives(content)
            equiv = attrs.get("http-equiv")
            if content and equiv and equiv.strip().lower() == "refresh":
                target = refresh_target(content)
                if target:
                    links.append((target, False))
        elif tag == _LINK:
            attrs = node.attributes
            rel = attrs.get("rel")
            href = attrs.get("href")
            if rel and href:
                rels = rel.lower().split()
                if not out.canonical and "canonical" in rels:
                    out.canonical = href
                if not _LINK_RELS.isdisjoint(rels):
                    links.append((href, "nofollow" in rels))
                elif not _REQUISITE_RELS.isdisjoint(rels):
                    requisites.append(href)
        elif tag in _FRAME_IDS:
            src = node.attributes.get("src")
            if src:
                links.append((src, False))
        elif tag == _BASE:
            href = node.attributes.get("href")
            if not out.base and href:
                out.base = href
        elif tag == _TITLE and not out.title:
            out.title = " ".join(node.text(deep=True).split())[:_MAX_TITLE]
    return out


def header_directives(values: list[str], product_token: str) -> set[str]:
    """X-Robots-Tag directives that apply to us: unprefixed ones and those after ``<token>:``."""
    token = product_token.lower()
    found: set[str] = set()
    for value in values:
        applies = True  # pieces before any "agent:" prefix apply to every crawler
        for piece in value.split(","):
            piece = piece.strip().lower()
            agent, colon, rest = piece.partition(":")
            if colon and agent.strip() not in _VALUED and " " not in agent.strip():
                applies = agent.strip() == token
                piece = rest.strip()
            if applies and piece:
                found |= _directives(piece.split(":", 1)[0])
    return found
