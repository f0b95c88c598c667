"""Callbacks' ``page.css()`` on the parser's lexbor tree against parsel (lxml), Scrapy's selector library."""

from __future__ import annotations

import gzip
from collections.abc import Iterator

import pytest
from parsel import Selector, SelectorList

from tests.extract.corpus import CORPUS, corpus_rows, needs_corpus
from webtrawl.extract.document import Document
from webtrawl.extract.lexsel import LexborSelector
from webtrawl.extract.page import Page

# Raw strings, whitespace-only text nodes included, in parsel's order (text nodes of nested matches: document
# order, each once). Not compared: an element's own HTML (lexbor and lxml serialize differently) and pages where
# the two parsers build different trees (<noscript> is text to lexbor, as to a browser running scripts).
SAME_IN_BOTH = [
    *("title::text", "h1::text", "h1 ::text", "h2::text", "p::text", "p ::text", "article p::text", "td::text"),
    *("span::text", "div > h2 ::text", "li a::attr(href)", "img::attr(src)", "link[rel=canonical]::attr(href)"),
    "meta[property='og:title']::attr(content)",
]
_NOSCRIPT_DIFFERS = "phys.org"


def _pages() -> Iterator[tuple[str, Document, Page, Selector]]:
    """Each corpus page as a callback's Page (lexbor) and as parsel's Selector (lxml)."""
    for page_id, url in corpus_rows():
        if _NOSCRIPT_DIFFERS not in url:
            body = gzip.decompress((CORPUS / "pages" / f"{page_id}.html.gz").read_bytes())
            doc = Document(url=url, text=body)
            yield url, doc, Page(doc), Selector(text=body.decode("utf-8", "replace"))


@needs_corpus
def test_page_css_gives_what_parsel_gives_on_every_corpus_page() -> None:
    for url, doc, page, lxml in _pages():
        for css in SAME_IN_BOTH:
            assert page.css(css).getall() == lxml.css(css).getall(), (url, css)
        for row in page.css("p")[:20]:  # nested queries, a bare ::text (all text below), attributes
            assert isinstance(row, LexborSelector)
        assert [r.css("::text").getall() for r in page.css("p")] == [r.css("::text").getall() for r in lxml.css("p")]
        assert [r.css("a::attr(href)").getall() for r in page.css("li")] == [
            r.css("a::attr(href)").getall() for r in lxml.css("li")
        ], url
        assert page.css("a").attrib == lxml.css("a").attrib, url
        assert "selector" not in doc.__dict__  # lxml never parsed the page


HTML = b"""<html><body><div id="shop" class="k"> x <b>bold</b> y<!-- c --></div>
<span>a<span>b</span>c</span>
<p class="price">Price: 3.50 &amp; more <a href="/next">next</a></p></body></html>"""


def test_results_answer_as_parsel_does() -> None:
    page = Page(Document(url="http://shop.example/", text=HTML))
    lxml = Selector(text=HTML.decode())
    div = page.css("div#shop")
    assert isinstance(div, SelectorList)
    assert div.css("::text").getall() == lxml.css("div#shop").css("::text").getall() == [" x ", "bold", " y"]
    assert page.css("div::text").getall() == [" x ", " y"]
    assert page.css("span::text").getall() == lxml.css("span::text").getall() == ["a", "b", "c"]
    assert page.css("span ::text").getall() == lxml.css("span ::text").getall() == ["a", "b", "c"]
    assert div.attrib == {"id": "shop", "class": "k"}
    assert page.css("p.price::text").re_first(r"[\d.]+") == "3.50"
    assert page.css("p.price::text").re(r"(\w+):") == ["Price"]
    assert page.css("p a::attr(href)").get() == "/next"
    assert page.css("p a::attr(title)").getall() == []
    assert page.css("h3::text").get() is None and page.css("h3::text").get("none") == "none"
    assert page.css("b").get() == "<b>bold</b>"
    assert page.css("span")[1:].css("::text").getall() == ["b"]


def test_what_lexbor_cannot_run_goes_to_parsel_on_the_same_element() -> None:
    page = Page(Document(url="http://shop.example/", text=HTML))
    assert page.css("p.price").xpath("./a/@href").get() == "/next"
    assert page.css("span")[1].xpath("text()").get() == "b"
    assert page.css("p:contains('Price') a::text").get() == "next"  # cssselect's :contains, not lexbor's
    assert page.css("p.price::text")[0].css("a").getall() == []  # CSS on a text result, as parsel answers it
    assert page.xpath("//b/text()").get() == "bold"


@pytest.mark.parametrize("content_type", ["application/xml", "application/rss+xml"])
def test_xml_pages_keep_parsel(content_type: str) -> None:
    page = Page(
        Document(url="http://x/feed", text=b"<rss><item><Title>T</Title></item></rss>", content_type=content_type)
    )
    assert page.css("Title::text").get() == "T"  # case kept: an XML parse


XPATH_SAME_IN_BOTH = ["//title/text()", "//h1//text()", "//p/text()", "//li//a/@href", "/html/@lang", "//span/text()"]


@needs_corpus
def test_page_xpath_paths_give_what_lxml_gives_without_parsing_there() -> None:
    for url, doc, page, lxml in _pages():
        for xpath in XPATH_SAME_IN_BOTH:
            assert page.xpath(xpath).getall() == lxml.xpath(xpath).getall(), (url, xpath)
        assert "selector" not in doc.__dict__  # lxml never parsed the page
        if page.css("p"):
            assert page.css("p")[0].xpath("//title/text()").getall() == lxml.xpath("//title/text()").getall()


def test_an_xpath_result_goes_to_parsel_by_the_same_path() -> None:
    page = Page(Document(url="http://shop.example/", text=HTML))
    spans = page.xpath("//span")
    assert isinstance(spans[1], LexborSelector)
    assert spans[1].xpath("text()").get() == "b"  # relative: parsel, on the element //span found there
    assert page.xpath("//p[1]/a/text()").get() == "next"  # a position: parsel


_CASES = """<html lang="EN"><body><form><input type="TEXT" name="upper"><input type="text" name="lower"></form>
<a rel="NoFollow" href="/upper">u</a><a rel="nofollow" href="/lower">l</a>
<div dir="RTL" class="x">r</div></body></html>"""
# Attributes whose values HTML's CSS matches in any case (type, rel, lang, dir...): XPath compares them exactly.
XPATH_EXACT = [
    "//input[@type='text']/@name",
    "//a[@rel='nofollow']/@href",
    "//a[contains(@rel, 'Follow')]/@href",
    "//a[starts-with(@rel, 'no')]/@href",
    "//html[@lang='en']/@lang",
    "//div[@dir='rtl']/text()",
]


@pytest.mark.parametrize("xpath", XPATH_EXACT)
def test_an_xpath_attribute_test_is_exact_in_every_attribute_as_lxml_has_it(xpath: str) -> None:
    doc = Document(url="http://shop.example/", text=_CASES)
    assert Page(doc).xpath(xpath).getall() == Selector(text=_CASES).xpath(xpath).getall()
    assert "selector" not in doc.__dict__  # still run on the lexbor tree


_EMBEDDED = """<html><body><script id="data" type="application/json">{"product": {"name": "Mug", "sizes": [1, 2]}}
</script><ul><li class="a">1</li><li>2</li></ul></body></html>"""


def test_the_rest_of_parsels_selector_answers_as_parsel_does() -> None:
    """Scrapy's embedded-JSON idiom (``.css("script#data::text").jmespath(...)``), ``.root`` and ``.type``: not
    only the README's list (a LexborSelector raised AttributeError)."""
    page, lxml = Page(Document(url="http://shop.example/", text=_EMBEDDED)), Selector(text=_EMBEDDED)
    for sel in (page, lxml):
        assert sel.css("script#data::text").jmespath("product.sizes").getall() == [1, 2]
        assert sel.css("script#data::text")[0].jmespath("product.name").get() == "Mug"
        assert sel.css("li")[0].root.tag == "li" and sel.css("li")[0].root.get("class") == "a"
        assert sel.css("li")[0].type == "html"
    with pytest.raises(AttributeError, match="read-only"):
        page.css("li")[0].drop()  # would change parsel's tree and not lexbor's: the page is read-only


def test_an_attribute_without_value_is_empty_and_a_missing_one_is_no_result() -> None:
    """As parsel: ``<a href>`` gives "" for ``::attr(href)``, and an ``<a>`` without it gives nothing."""
    html = b'<a href>v</a><a>m</a><a href="">e</a><a href="/u" HREF="/dup">x</a>'
    doc = Document(url="http://site.example/", text=html)
    expected = Selector(text=html.decode()).css("a::attr(href)").getall()
    assert Page(doc).css("a::attr(href)").getall() == expected == ["", "", "/u"]
