"""What a callback's page answers as Scrapy's response does."""

from __future__ import annotations

from webtrawl.extract import Document, Page


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
