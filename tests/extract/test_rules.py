"""Rules files on real corpus pages: the items a user gets for several sites, the links a rule follows, and the
CSS fast path (lexbor, on the parser's own tree) giving exactly what parsel gives."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.extract.corpus import CORPUS, RULES, corpus_page, corpus_rows, needs_corpus
from tests.extract.helpers import run
from tests.parse.helpers import make_page
from webtrawl.errors import InputError
from webtrawl.extract import Document
from webtrawl.extract.rules import load_rules
from webtrawl.extract.select import Select

pytestmark = needs_corpus


def _items(url_part: str, nth: int = 0) -> tuple[list[dict[str, object]], list[str]]:
    out = run(corpus_page(url_part, nth), extract=str(RULES))
    assert out.record.error is None, out.record.error_detail
    assert out.record.items == len(out.items)
    return out.items, [n.url for n in out.new_urls]


def test_nytimes_css_meta_and_a_follow_selector() -> None:
    items, follow = _items("nytimes.com/2019/11/19")
    (item,) = items
    assert item["headline"] == "Republicans Are Following Trump to Nowhere"
    assert item["byline"] == "Jamelle Bouie"  # meta byl "By Jamelle Bouie", through the field's regex
    assert item["section"] == "Opinion"
    assert item["published"] == "2019-11-19T11:00:09+00:00"
    words = item["words"]
    assert isinstance(words, list) and len(words) > 20 and all(isinstance(w, str) and w == w.strip() for w in words)
    assert follow and all("/section/" in url for url in follow)  # only what follow = "css:..." selects


def test_slashgear_jsonld_and_follow_none() -> None:
    for nth, headline in enumerate(
        [
            "The VW ID. SPACE VIZZION is a weird EV sports wagon with a secret message",
            "2020 Audi e-tron Sportback revealed as electric 4-door coupe",
        ]
    ):
        items, follow = _items("slashgear.com", nth)
        assert items[0]["headline"] == headline
        assert items[0]["author"] == "Chris Davies"
        assert str(items[0]["published"]).startswith("2019-11-20T")
        assert str(items[0]["image"]).startswith("https://scdn.slashgear.com/")
        assert follow == []


def test_wsj_all_values_and_dates() -> None:
    items, follow = _items("wsj.com/articles/google")
    assert items == [
        {
            "headline": "Google Stadia, Microsoft xCloud, Apple Arcade: So Many Ways to Play…and Pay",
            "author": ["Sarah E. Needleman"],
            "published": "2019-11-19T13:03:00+00:00",
            "keywords": items[0]["keywords"],
        }
    ]
    assert "Microsoft" in str(items[0]["keywords"])
    assert len(follow) > 100  # no follow key: the page's links as usual


def test_macrumors_xpath_and_int() -> None:
    items, _ = _items("macrumors.com")
    assert items[0]["headline"] == "13-Inch MacBook Pro With Scissor Keyboard Expected in First Half of 2020"
    assert isinstance(items[0]["paragraphs"], int) and items[0]["paragraphs"] > 5


def test_a_page_no_rule_matches_gives_no_items_and_no_count() -> None:
    out = run(corpus_page("venturebeat.com"), extract=str(RULES))
    assert out.items == [] and out.record.items == 0 and "items" not in out.counters


def test_items_scope_required_default_and_types(tmp_path: Path) -> None:
    rules = tmp_path / "shop.toml"
    rules.write_text(
        """
[[rule]]
url = "/shop/"
items = "css:article.product"
required = ["name"]
[rule.fields]
name = "css:h2::text"
price = { css = ".price::text", type = "float" }
stock = { css = ".stock::text", type = "int", default = 0 }
sku = { css = "::attr(data-sku)" }
tags = { css = "li::text", all = true }
added = { css = "time::attr(datetime)", type = "date" }
"""
    )
    html = b"""<html><body>
<article class="product" data-sku="A1"><h2> Red  mug </h2><p class="price">\xc2\xa31,234.50</p>
<p class="stock">12 left</p><ul><li>kitchen</li><li> red </li></ul><time datetime="2023-05-01">May</time></article>
<article class="product" data-sku="B2"><h2>Blue mug</h2><p class="price">n/a</p></article>
<article class="product" data-sku="C3"><p class="price">3</p></article>
</body></html>"""
    out = run(make_page(html, url="http://shop.example/shop/mugs"), extract=str(rules))
    assert out.items == [
        {
            "name": "Red  mug",
            "price": 1234.5,
            "stock": 12,
            "sku": "A1",
            "tags": ["kitchen", "red"],
            "added": "2023-05-01",
        },
        {"name": "Blue mug", "price": None, "stock": 0, "sku": "B2", "tags": [], "added": None},
    ]  # the third has no name: required


CSS_SAME_IN_BOTH = [
    "h1::text",
    "h1 ::text",
    "title::text",
    "li a::attr(href)",
    "meta[property='og:title']::attr(content)",
    "p::text",
    "div > h2 ::text",
    "img::attr(src)",
    "span::text",  # matches that nest: their text in document order, once (parsel's node-set)
    "td::text",
]


@pytest.mark.parametrize("css", CSS_SAME_IN_BOTH)
def test_css_on_the_parsers_lexbor_tree_gives_what_parsel_gives(css: str) -> None:
    """The fast path (no second parse) against Scrapy's selector library, on every corpus page."""
    fast = Select.parse(css)
    assert fast.engine == "lexbor"
    slow = Select("css", css, engine="parsel")

    for page_id, url in corpus_rows():
        if "phys.org" in url and css == "span::text":  # a <noscript> span: markup to lxml, text to lexbor
            continue
        html = gzip.decompress((CORPUS / "pages" / f"{page_id}.html.gz").read_bytes()).decode("utf-8", "replace")
        doc = Document(url=url, text=html)
        assert fast.values(doc, None, first=False) == slow.values(doc, None, first=False), url


XPATH_SAME_IN_BOTH = [
    *("//title/text()", "//h1//text()", "//h2/text()", "//p/text()", "//article//p/text()", "//span/text()"),
    *("//li//a/@href", "//img/@src", "//link[@rel='canonical']/@href", "//meta[@property='og:title']/@content"),
    *("/html/@lang", "//div[contains(@class, 'content')]//a/@href", "//a[starts-with(@href, 'https')]/@href"),
    *("//*[@itemprop]/@itemprop", "//script[@type='application/ld+json']/text()", "//td/text()", "//div/h2//text()"),
]


@pytest.mark.parametrize("xpath", XPATH_SAME_IN_BOTH)
def test_xpath_paths_run_on_the_lexbor_tree_and_give_what_lxml_gives(xpath: str) -> None:
    fast = Select.parse(f"xpath:{xpath}")
    assert fast.engine == "lexbor"
    slow = Select("xpath", xpath, engine="parsel")
    for page_id, url in corpus_rows():
        if "phys.org" in url:  # <noscript> content: markup to lxml, text to lexbor (as to a browser)
            continue
        html = gzip.decompress((CORPUS / "pages" / f"{page_id}.html.gz").read_bytes()).decode("utf-8", "replace")
        doc = Document(url=url, text=html)
        assert fast.values(doc, None, first=False) == slow.values(doc, None, first=False), url


@pytest.mark.parametrize("xpath", ["count(//p)", "//p[1]/text()", ".//a", "//table/tr", "//tbody", "//H1", "//a//@x"])
def test_xpath_lexbor_cannot_run_as_lxml_does_stays_on_parsel(xpath: str) -> None:
    assert Select.parse(f"xpath:{xpath}").engine == "parsel"


def test_css_lexbor_cannot_run_falls_back_to_parsel() -> None:
    assert Select.parse("css:p:contains('x')::text").engine == "parsel"
    rules = load_rules(RULES)
    assert [r.engine for r in rules.rules] == ["lexbor", "lexbor", "lexbor", "parsel"]


def test_a_follow_selector_keeps_rel_nofollow(tmp_path: Path) -> None:
    rules = tmp_path / "f.toml"
    rules.write_text('[[rule]]\nurl = "."\nfollow = "css:a.next"\n[rule.fields]\nh = "css:h1::text"\n')
    html = b"<h1>x</h1><a class=next href=/2>2</a><a class=next rel=nofollow href=/ads>ad</a><a href=/other>o</a>"
    out = run(make_page(html), extract=str(rules))
    assert [n.url for n in out.new_urls] == ["http://site.example/2"]
    assert out.dropped == [("http://site.example/ads", "nofollow")]


def test_a_rules_priority_ranks_the_links_it_follows_and_recrawl_after_is_per_rule(tmp_path: Path) -> None:
    rules = tmp_path / "r.toml"
    rules.write_text(
        '[[rule]]\nurl = "/list/"\nfollow = "css:a.item"\npriority = 0\nrecrawl_after = "1h"\n'
        '[rule.fields]\nh = "css:h1::text"\n'
        '[[rule]]\nurl = "."\n[rule.fields]\nh = "css:h1::text"\n'
    )
    html = b"<h1>x</h1><a class=item href=/item/1>1</a><a href=/other>o</a>"
    out = run(make_page(html, url="http://site.example/list/1"), extract=str(rules))
    assert [(n.url, n.priority) for n in out.new_urls] == [("http://site.example/item/1", 0)]
    out = run(make_page(html, url="http://site.example/page"), extract=str(rules))
    assert [n.priority for n in out.new_urls] == [-1, -1]  # the second rule gives none: by depth
    loaded = load_rules(rules)
    assert loaded.recrawl_after("http://site.example/list/2", "") == 3600.0
    assert loaded.recrawl_after("http://site.example/page", "text/html") == 0.0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("priority = 4", "r.toml:3: priority must be a whole number 0 (first) .. 3, not 4"),
        ('priority = "high"', "r.toml:3: priority must be a whole number 0 (first) .. 3, not 'high'"),
        ('recrawl_after = "soon"', "r.toml:3: recrawl_after: not a duration: 'soon'"),
        ("recrawl_after = 0", "r.toml:3: recrawl_after must be a duration above 0"),
    ],
)
def test_bad_priority_or_recrawl_after_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    rules = tmp_path / "r.toml"
    rules.write_text(f'[[rule]]\nurl = "."\n{line}\n[rule.fields]\nh = "css:h1::text"\n')
    with pytest.raises(InputError) as caught:
        load_rules(rules)
    assert str(caught.value).startswith(str(tmp_path / message.split(":")[0]) + ":" + message.split(":", 1)[1])
