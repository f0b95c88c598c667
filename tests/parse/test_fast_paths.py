"""The parser's fast paths give exactly what the general code gives: canonicalize's regex shortcuts, the
depth guard's C-only tests, extract's attribute query and tag-id dispatch, the per-page cache of raw hrefs, the
origin verdicts kept across pages, the single-pattern scope search and the path-repeat count."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from webtrawl.errors import WebtrawlError
from webtrawl.formats.canonical import _canonicalize, canonicalize
from webtrawl.parse import Scope, process_page
from webtrawl.parse.html import (
    _FEW_TAGS,
    _FRAMES,
    _LINK_RELS,
    _MAX_DEPTH,
    _MAX_TITLE,
    _QUERY,
    _REQUISITE_RELS,
    _REQUISITE_TAGS,
    _UNCOUNTED,
    Extracted,
    _directives,
    _drop_deep,
    _limit_depth,
    extract,
    refresh_target,
)
from webtrawl.parse.traps import _repeats

from .fuzzing import corpus_pages
from .helpers import URL, make_ctx, make_page

_BASES = [None, URL, "https://x.example/a/b?q=1", "http://u@x.example:8080/a/", "https://[::1]/"]
# Mostly canonical-looking pieces, so that the fast paths are taken often and their edges are crossed.
_PIECES = st.sampled_from(
    [
        *("https://", "http://", "HTTP://", "/", "//", "#", "?", "./", "../", "/.", ".well-known", "a", "Z", "0"),
        *("example.com", "EXAMPLE.com", "bücher.de", "xn--bcher-kva.de", "[::1]", "127.0.0.1", "a..b", "-a"),
        *(":80", ":443", ":8080", ":", ":0443", "@", "u@", "%41", "%2e", "%", "\\", " ", "\t", "\n", "\x00"),
        *("=", "&", ";", "~", "!", "'", "(", "*", "+", ",", "$", "[", "]", "é", "\x7f", "javascript:", "mailto:x"),
    ]
)


def _outcome(fn: Callable[[str, str | None], str], url: str, base: str | None) -> object:
    try:
        return fn(url, base)
    except WebtrawlError as exc:
        return type(exc), str(exc)


@settings(max_examples=3000, deadline=None)
@given(url=st.lists(_PIECES, max_size=12).map("".join), base=st.sampled_from(_BASES))
@example(url="https://a.example/x?#f\t ", base=None)
@example(url="https://a.example/x?y#", base=None)
@example(url="/x?", base=URL)
@example(url="/a/./b", base=URL)
@example(url="#", base=URL)
@example(url="#", base=None)
@example(url="https://A.example/", base=None)
@example(url="https://a.example:443/", base=None)
@example(url="https://u@a.example/", base=None)
@example(url="https://a.example", base=None)
def test_canonicalize_equals_its_general_path(url: str, base: str | None) -> None:
    assert _outcome(canonicalize, url, base) == _outcome(_canonicalize, url, base)


@pytest.mark.parametrize(
    ("url", "base", "expected"),
    [
        ("https://a.example/x/y?q=1#frag", None, "https://a.example/x/y?q=1"),
        ("http://a.example:8080/", None, "http://a.example:8080/"),
        ("/p/q.html?x=1#top", URL, "http://site.example/p/q.html?x=1"),
        ("#top", "https://a.example/x?y=1", "https://a.example/x?y=1"),
        ("https://A.example:443/x", None, "https://a.example/x"),  # not canonical: the general path's answer
        ("/a/../b", URL, "http://site.example/b"),
    ],
)
def test_common_shapes(url: str, base: str | None, expected: str) -> None:
    assert canonicalize(url, base) == expected


_TOKENS = [
    *("<div>", "</div>", "<span class='a'>", "</span>", "<section>", "</p>", "<DIV>", "<b>", "</b>", "<ul>"),
    *("<br>", "<img src=x>", "<p>", "<li>", "<a href=/x>", "<td>", "<colgroup>", "<col>", "<area>", "<areas>"),
    *("if (a < b)", "<3", "< ", "<!-- x -->", "text", "<br title='<div>'>", "<svg>", "</svg>", "<a", ">"),
]


def _limit_depth_reference(doc: bytes | str) -> bytes | str:
    """The guard as it was first written: plain counts, then the full pass."""
    tags = doc.count("<") if isinstance(doc, str) else doc.count(b"<")
    ends = doc.count("</") if isinstance(doc, str) else doc.count(b"</")
    if tags <= _UNCOUNTED or (tags <= _FEW_TAGS and tags - 2 * ends <= _MAX_DEPTH):
        return doc
    return _drop_deep(doc)


@pytest.mark.parametrize("seed", range(60))
def test_limit_depth_equals_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    weights = [rng.random() for _ in _TOKENS]
    if seed % 3 == 0:  # no end tags: deep enough for the full pass to drop some
        weights = [0.0 if token.startswith("</") else w for token, w in zip(_TOKENS, weights, strict=True)]
    html = "".join(rng.choices(_TOKENS, weights, k=rng.randint(0, 3 * _UNCOUNTED)))  # either side of both bounds
    for doc in (html, html.encode()):
        assert _limit_depth(doc) == _limit_depth_reference(doc)


def test_many_script_comparisons_are_not_mistaken_for_nesting() -> None:
    # more '<' than _UNCOUNTED and few end tags: the count of tags that can nest is what lets it through
    script = b"if (a<b) x();" * (_UNCOUNTED + 100)
    html = b"<html><body><script>" + script + b"</script><a href=/x>x</a></body></html>"
    assert _limit_depth(html) is html  # no regex pass: nothing in it can nest
    deep = b"<div>" * (_UNCOUNTED + 10) + b"<a href=/x>x</a>"
    assert _limit_depth(deep) == b"<div>" * _MAX_DEPTH + b"<a href=/x>x</a>"
    # up to _UNCOUNTED '<' a page cannot nest deeper than the count below already let through: parsed as it is
    shallower = b"<div>" * (_UNCOUNTED - 2) + b"<a href=/x>x</a>"  # _UNCOUNTED "<" in all
    assert _limit_depth(shallower) is shallower
    balanced = b"<div>" * _UNCOUNTED + b"</span>" * _UNCOUNTED  # the counts let it through as is
    assert _limit_depth(balanced) is balanced


def test_repeated_hrefs_count_as_often_as_before() -> None:
    html = (
        b'<a href="/a">a</a><a href="mailto:x@y.example">m</a><a href="/a">a</a><a href="/a#f">a</a>'
        b'<a href="mailto:x@y.example">m</a><a href="/b" rel="nofollow">b</a><a href="/b">b</a>'
        b'<a href="/b" rel="nofollow">b</a><a href="/' + b"x" * 900 + b'">long</a><a href="/' + b"x" * 900 + b'">l</a>'
    )
    out = process_page(make_page(html), make_ctx(max_url_length=200))
    assert [n.url for n in out.new_urls] == ["http://site.example/a", "http://site.example/b"]
    assert out.counters == {"pages": 1, "drop:scheme": 2, "drop:nofollow": 2, "drop:url-too-long": 2}
    assert [reason for _, reason in out.dropped] == [
        "scheme", "scheme", "nofollow", "nofollow", "url-too-long", "url-too-long",
    ]  # fmt: skip


def test_origin_verdicts_are_kept_across_pages() -> None:
    asked: list[tuple[str, int]] = []

    def url_allowed(host: str, port: int) -> str | None:
        asked.append((host, port))
        return "port-policy" if port == 8081 else None

    ctx = make_ctx(url_allowed=url_allowed)
    html = b'<a href="http://o.example:8081/1">1</a><a href="http://o.example:8081/2">2</a><a href="/3">3</a>'
    first = process_page(make_page(html), ctx)
    second = process_page(make_page(html, url="http://site.example/other.html"), ctx)
    for out in (first, second):
        assert [n.url for n in out.new_urls] == ["http://site.example/3"]
        assert out.counters["drop:port-policy"] == 2
    assert asked == [("o.example", 8081), ("site.example", 80)]


def test_single_include_and_exclude_patterns() -> None:
    scope = Scope("any", [], [r"(?i)/NEWS/"], [r"\.pdf$"])
    assert scope.allows("https://a.example/news/1")
    assert not scope.allows("https://a.example/about")
    assert not scope.allows("https://a.example/news/1.pdf")
    # several patterns keep their own flags and groups (they are not joined into one regex)
    scope = Scope("any", [], [r"(?i)^HTTPS://A\.", r"(x)\1"], [])
    assert scope.allows("https://a.example/")
    assert scope.allows("http://b.example/xx")
    assert not scope.allows("http://b.example/x")


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        (
            b'<svg><a href="/s1">x</a><a xlink:href="/s2">y</a><use href="#i"/></svg>'
            b'<a HREF="/up" REL="NoFollow">u</a>',
            ("", "", "", set(), [("/s1", False), ("/up", True)]),
        ),
        (
            b'<a href="/d1" href="/d2" rel="x" rel="nofollow">d</a><area href="/ar" rel="nofollow">',
            ("", "", "", set(), [("/d1", False), ("/ar", True)]),
        ),
        (
            b'<link href="/x" name="n" content="c"><link rel="canonical"><link rel="CANONICAL" href="/c1">',
            ("", "", "/c1", set(), [("/c1", False)]),  # the canonical copy is a link to follow too
        ),
        (
            b'<meta name="robots"><meta content="noindex"><meta name="ROBOTS " content="NoIndex, nofollow">'
            b'<input name="robots" content="none"><span name=webtrawl content=noarchive href=/span></span>',
            ("", "", "", {"noindex", "nofollow"}, []),
        ),
        (b'<base name="x" content="y"><base href=""><base href="/b1"><base href="/b2">', ("", "/b1", "", set(), [])),
        (
            b'<title> </title><title>Real  title</title><template><a href="/t">t</a></template><a href="">e</a>',
            ("Real title", "", "", set(), []),
        ),
    ],
)
def test_extract_keeps_only_the_elements_it_asks_for(html: bytes, expected: tuple[object, ...]) -> None:
    found = extract(html, "webtrawl")
    assert (found.title, found.base, found.canonical, found.robots, found.links) == expected


def _reference_extract(html: bytes, product_token: str) -> tuple[object, ...]:
    """extract as it was written first: the same query's nodes by tag name, each read from its attributes dict.
    (Not a walk of the whole tree: lexbor returns an element once per selector of the list it matches, so an
    ``<a href name content>`` comes twice, and extract keeps that.)"""
    from selectolax.lexbor import LexborHTMLParser

    out = Extracted()
    robot_names = ("robots", product_token.lower())
    for node in LexborHTMLParser(_limit_depth(html)).css(_QUERY):
        tag, attrs = node.tag, node.attributes
        if tag in _REQUISITE_TAGS:
            src = attrs.get("src")
            if src and (tag != "input" or (attrs.get("type") or "").lower() == "image"):
                out.requisites.append(src)
        elif tag in ("a", "area"):
            if href := attrs.get("href"):
                rel = attrs.get("rel")
                out.links.append((href, rel is not None and "nofollow" in rel.lower().split()))
        elif tag == "meta":
            name, content, equiv = attrs.get("name"), attrs.get("content"), attrs.get("http-equiv")
            if name and content and name.strip().lower() in robot_names:
                out.robots |= _directives(content)
            if content and equiv and equiv.strip().lower() == "refresh" and (target := refresh_target(content)):
                out.links.append((target, False))
        elif tag == "link":
            rel, href = attrs.get("rel"), attrs.get("href")
            if rel and href:
                rels = rel.lower().split()
                if not out.canonical and "canonical" in rels:
                    out.canonical = href
                if not _LINK_RELS.isdisjoint(rels):
                    out.links.append((href, "nofollow" in rels))
                elif not _REQUISITE_RELS.isdisjoint(rels):
                    out.requisites.append(href)
        elif tag in _FRAMES:
            if src := attrs.get("src"):
                out.links.append((src, False))
        elif tag == "base":
            if not out.base and (href := attrs.get("href")):
                out.base = href
        elif tag == "title" and not out.title:
            out.title = " ".join(node.text(deep=True).split())[:_MAX_TITLE]
    return out.title, out.base, out.canonical, out.robots, out.links, out.requisites


_FRAMESET = b'<head><title>f</title></head><frameset><frame src="/f1"><frame><frame src="/f2"></frameset>'
_ODD_ELEMENTS = (
    b'<iframe src="/if"></iframe><input src="/i1" type="IMAGE">'
    b'<input src="/i2"><img srcset="a 1x" src="/im"><img src=""><lazy-image src="/no"><script src="/s.js">'
    b'</script><svg><image href="/si"/><title>svg title</title><a href="/sa" rel="nofollow x">a</a></svg>'
    b'<meta http-equiv="Refresh" content="0; url=/next"><link rel="stylesheet icon" href="/c.css">'
    b'<foo:a href="/prefixed">p</foo:a><video src="/v"><source src="/src"><track src="/t"></video>'
    b'<a href="/twice" name="n" content="c">matched by two selectors</a>'
)


def test_extract_equals_its_dispatch_by_tag_name() -> None:
    """The dispatch on lexbor's tag ids and the lazy attribute lookups find exactly what the dispatch on tag names
    and attribute dicts finds, on the corpus pages (cut, too) and on elements the corpus seldom has."""
    pages = [*corpus_pages(60), _ODD_ELEMENTS, _FRAMESET]
    pages += [page[: len(page) // 3] for page in pages[:20]]
    for page in pages:
        found = extract(page, "webtrawl")
        got = (found.title, found.base, found.canonical, found.robots, found.links, found.requisites)
        assert got == _reference_extract(page, "webtrawl")
    assert _reference_extract(_FRAMESET, "webtrawl")[4] == [("/f1", False), ("/f2", False)]
    odd = _reference_extract(_ODD_ELEMENTS, "webtrawl")
    assert odd[4] == [("/if", False), ("/sa", True), ("/next", False), ("/twice", False), ("/twice", False)]
    assert odd[5] == ["/i1", "/im", "/s.js", "/c.css", "/v", "/src", "/t"]


@pytest.mark.parametrize("seed", range(20))
def test_path_repeats_equals_a_plain_count(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(200):
        path = "/" + "/".join(rng.choices(["a", "b", "", "c", "a.html"], k=rng.randint(0, 9)))
        limit = rng.randint(1, 4)
        segments = [s for s in path.split("/") if s]
        expected = bool(segments) and max(segments.count(s) for s in segments) >= limit
        assert _repeats(path, limit) == expected, (path, limit)
