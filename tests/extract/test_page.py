"""What a callback's page answers as Scrapy's response does, and a Follow written as a Scrapy Request."""

from __future__ import annotations

import pytest

from webtrawl.extract import Document, Follow, LinkExtractor, Page


def test_response_headers_are_found_in_any_case_as_scrapys_are() -> None:
    """``page.headers.get("Content-Type")``, as a ported spider reads Scrapy's headers, read None: only the
    lower-case name was found."""
    doc = Document(
        url="http://shop.test/",
        text="",
        headers=[("Content-Type", "text/html"), ("Set-Cookie", "a=1"), ("set-cookie", "b=2")],
    )
    headers = Page(doc).headers
    assert headers.get("Content-Type") == headers["content-type"] == headers["CONTENT-TYPE"] == "text/html"
    assert headers["Set-Cookie"] == "a=1, b=2"
    assert "Content-Type" in headers and headers.get("X-None") is None and headers.get("X-None", "-") == "-"
    assert list(headers) == ["content-type", "set-cookie"]  # the names as before: lower-case


@pytest.mark.parametrize("callback", ["parse_item", Page.follow])
def test_a_follow_given_its_callback_in_the_priority_place_says_to_name_it(callback: object) -> None:
    """``Follow(url, self.parse_item)``, Scrapy's ``Request(url, self.parse_item)`` ported, said "priority must be
    a whole number 0 (first) .. 3, not <bound method ...>"."""
    with pytest.raises(ValueError, match=r"the second argument is the priority .*Follow\(url, callback=\.\.\.\)"):
        Follow("http://shop.test/p/1", callback)  # type: ignore[arg-type]


def test_page_follow_takes_a_link_extractors_link_as_scrapys_response_follow_does() -> None:
    """``for link in LinkExtractor(...).extract_links(page): yield page.follow(link, ...)`` (Scrapy's idiom) failed:
    "page.follow wants a URL string or a selector, not a Link"."""
    page = Page(Document(url="http://shop.test/c/1", text="<a href='/p/1'>one</a> <a href='p/2'>two</a>"))
    links = LinkExtractor().extract_links(page)
    assert [f.url for f in page.follow_all(links)] == ["http://shop.test/p/1", "http://shop.test/c/p/2"]
    assert page.follow(links[0], callback="parse").url == "http://shop.test/p/1"


def test_page_jmespath_queries_an_apis_json_as_scrapys_response_jmespath_does() -> None:
    """Scrapy 2.10's ``response.jmespath("products[].name")`` failed: the page had no jmespath."""
    body = '{"products": [{"name": "Rake"}, {"name": "Hoe"}], "next": null}'
    page = Page(Document(url="http://shop.test/api", text=body, content_type="application/json"))
    assert page.jmespath("products[].name").getall() == ["Rake", "Hoe"]
    assert page.jmespath("next").get() is None and page.jmespath("products[0].name").get() == "Rake"


def test_follow_all_passes_over_a_selected_element_without_an_href_as_scrapys_does() -> None:
    """``page.follow_all(css="a.page-link")`` on a pagination whose current page is an ``<a>`` without an href
    raised, and the callback lost what it would have yielded after; Scrapy's follow_all passes such an element
    over (``page.follow`` of one still says it has no href)."""
    html = "<a class=pl href=?p=1>1</a><a class=pl>2</a><a class=pl href=?p=3>3</a><img class=pl src=x.png>"
    page = Page(Document(url="http://shop.test/l?p=2", text=html))
    expected = ["?p=1", "?p=3"]  # as the page has them: the parser resolves them
    assert [f.url for f in page.follow_all(css=".pl")] == expected
    assert [f.url for f in page.follow_all(page.xpath("//a[@class='pl']"))] == expected
    with pytest.raises(ValueError, match="the selected element has no href"):
        page.follow(page.css("a.pl")[1])
