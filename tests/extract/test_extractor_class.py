"""``--extract package.module:Class``: an Extractor class built in the process that runs it, and the optional
capabilities (request headers, "found nothing" for --render auto, recrawl intervals) asked of any extractor, not
only of the rules files."""

from __future__ import annotations

import pytest

from tests.extract.helpers import run
from tests.parse.helpers import make_page
from webtrawl.config import ExtractionOptions, RenderOptions
from webtrawl.errors import InputError
from webtrawl.extract import build_extraction, load_extractor
from webtrawl.extract.hints import RuleHints

CLASS = "tests.extract.spiders:Headlines"
NEWS = "http://site.test/news/1"


def test_an_extractor_class_gives_the_pages_items() -> None:
    out = run(make_page(b"<h1>One</h1><p>x</p><h1>Two</h1>", url=NEWS), extract=CLASS)
    assert out.record.error is None, out.record.error_detail
    assert out.items == [{"headline": "One"}, {"headline": "Two"}] and out.record.items == 2


def test_the_fetcher_asks_any_extractor_for_headers_and_for_pages_it_finds_nothing_in() -> None:
    hints = RuleHints.from_config(ExtractionOptions(extract=CLASS), RenderOptions(render="auto"))
    assert hints is not None and hints.has_headers
    assert hints.headers("http://site.test/api/x") == {"X-Headlines": "1"} and hints.headers(NEWS) == {}
    html = [("Content-Type", "text/html")]
    assert hints.no_items(NEWS, 200, html, b"<div id=app></div>")
    assert not hints.no_items(NEWS, 200, html, b"<h1>Here</h1>")
    assert not hints.no_items("http://site.test/about", 200, html, b"<div id=app></div>")  # not a page it wants


def test_a_callback_function_gives_the_fetcher_nothing() -> None:
    assert (
        RuleHints.from_config(ExtractionOptions(extract="tests.extract.spiders:article"), RenderOptions(render="auto"))
        is None
    )


def test_recrawl_intervals_come_from_any_extractor() -> None:
    extraction = build_extraction(ExtractionOptions(extract=CLASS))
    assert extraction is not None and extraction.sets_recrawl()
    assert extraction.recrawl_after(NEWS, "text/html") == 60.0
    assert extraction.recrawl_after("http://site.test/", "text/html") == 0.0
    plain = build_extraction(ExtractionOptions(extract="tests.extract.spiders:article"))
    assert plain is not None and not plain.sets_recrawl() and plain.recrawl_after(NEWS, "") == 0.0


def test_a_class_that_is_not_an_extractor_is_refused_at_load() -> None:
    with pytest.raises(InputError, match="NotAnExtractor has no extract"):
        load_extractor("tests.extract.spiders:NotAnExtractor")
    assert load_extractor(CLASS).name == "headlines"


def test_a_spider_given_as_extract_is_refused_with_what_to_do() -> None:
    """Crawler("shop.py:Shop") or --extract shop.py:Shop said 'Shop has no extract(doc) method (see Extractor)'."""
    with pytest.raises(InputError, match=r"^--extract tests\.api\.pages:Shop: Shop is a Spider: give it as --spider"):
        load_extractor("tests.api.pages:Shop")
