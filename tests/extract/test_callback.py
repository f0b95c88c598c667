"""Python callbacks on real corpus pages: items from parsel selectors, JSON-LD and meta; links they yield; and
failures (raising, looping, non-JSON items) recorded on the page while the next page is fine."""

from __future__ import annotations

import logging
import re

import pytest

from tests.extract.corpus import SPIDERS, corpus_page, needs_corpus
from tests.extract.helpers import extract_ctx, run
from tests.parse.helpers import make_page
from webtrawl.parse import process_page


def _spider(name: str) -> str:
    return f"{SPIDERS}:{name}"


@needs_corpus
@pytest.mark.parametrize(
    ("site", "h1", "types"),
    [
        ("slashgear.com", "The VW ID. SPACE VIZZION is a weird EV sports wagon with a secret message", "NewsArticle"),
        ("nytimes.com/2019/11/18", "Trump\u2019s Made-for-TV Trade War Keeps World Guessing", None),
        ("techcrunch.com", "New York State Attorney General reportedly investigating WeWork", "NewsArticle"),
        ("ign.com", None, "Article"),
    ],
)  # fmt: skip
def test_article_callback_on_corpus_pages(site: str, h1: str | None, types: str | None) -> None:
    out = run(corpus_page(site), extract=_spider("article"))
    assert out.record.error is None, out.record.error_detail
    (item,) = out.items
    assert item["status"] == 200 and item["title"] and item["og_title"]
    if h1 is not None:
        assert item["h1"] == h1
    assert (types in item["jsonld_types"]) if types else item["jsonld_types"] == []
    assert str(item["lang"]).startswith("en")


def test_yielded_links_are_followed_through_the_filters() -> None:
    html = b"<h1>Hi</h1><a href='/a'>a</a><link rel=canonical href='/canon'>"
    out = run(make_page(html), extract=_spider("article"))
    assert {n.url for n in out.new_urls} == {"http://site.example/a", "http://site.example/canon"}
    out = run(make_page(html), extract=_spider("only_items"))
    assert out.items == [{"h1": "Hi"}] and [n.url for n in out.new_urls] == ["http://site.example/made-up"]


def test_follow_none_on_the_last_page_is_skipped() -> None:
    last = run(make_page(b"<h1>end</h1>"), extract=_spider("next_page"))
    assert last.record.error is None and last.items == [{"h1": "end"}] and last.new_urls == []
    more = run(make_page(b"<h1>p</h1><a class=next href=p2>next</a>"), extract=_spider("next_page"))
    assert [n.url for n in more.new_urls] == ["http://site.example/dir/p2"]


def test_a_followed_link_with_a_priority_carries_its_level_to_the_frontier() -> None:
    html = b"<h1>p</h1><a href=/plain>p</a><a class=first href=/deep/1>d</a><a href=/plain2>q</a>"
    out = run(make_page(html), extract=_spider("ranked"))
    # the page's own links stay (by depth); the ranked one, also one of the page's links, gets its level
    assert [(n.url.rsplit("/", 2)[-1], n.depth, n.priority) for n in out.new_urls] == [
        ("plain", 1, -1),
        ("1", 1, 0),
        ("plain2", 1, -1),
    ]
    bad = run(make_page(html), extract=_spider("bad_priority"))
    assert bad.record.error == "extract-error" and "priority must be a whole number 0" in str(bad.record.error_detail)
    assert [n.priority for n in bad.new_urls] == [-1, -1, -1]  # the page's links are followed as usual


def _failing_page(spider: str, bucket: int) -> str:
    """A URL the spider's ``_bucket`` puts in ``bucket``."""
    from tests.extract import spiders

    return next(u for i in range(100) if spiders._bucket(u := f"http://site.example/p{i}") == bucket)


def test_a_raising_callback_is_an_extract_error_and_the_crawl_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    ctx = extract_ctx(extract=_spider("raise_some"))
    bad = _failing_page("raise_some", 0)
    with caplog.at_level(logging.ERROR, "webtrawl.extract"):
        for _ in range(3):
            out = process_page(make_page(b"<h1>x</h1><a href='/next'>n</a>", url=bad), ctx)
            assert out.record.error == "extract-error"
            assert (
                out.record.error_detail.startswith("ValueError: no price on")
                and "spiders.py:" in out.record.error_detail
            )
            assert out.items == [] and out.counters["err:extract-error"] == 1 and out.counters["pages"] == 1
            assert [n.url for n in out.new_urls] == ["http://site.example/next"]  # links followed as usual
    assert sum("Traceback" in r.getMessage() for r in caplog.records) == 1  # logged once per distinct error
    good = process_page(make_page(b"<h1>fine</h1>", url=_failing_page("raise_some", 2)), ctx)
    assert good.record.error is None and good.items == [{"h1": "fine"}]


@pytest.mark.parametrize("callback", ["raise_midway", "araise_midway"])
def test_a_generator_callback_that_raises_keeps_what_it_yielded_before(callback: str) -> None:
    """One bad product on a listing lost the page's other items and links, where Scrapy keeps what a callback
    yielded before its exception; the page's error still names the line that raised."""
    import inspect

    from tests.extract import spiders

    lines, first = inspect.getsourcelines(getattr(spiders, callback))
    line = first + lines.index('    raise ValueError("no price on the third")\n')
    out = run(make_page(b"<h1>x</h1><a href='/own'>o</a>", url="http://site.example/p"), extract=_spider(callback))
    assert out.record.error == "extract-error"
    assert out.record.error_detail == f"ValueError: no price on the third (spiders.py:{line})"
    assert out.items == [{"n": 1}, {"n": 2}] and out.record.items == 2 and out.counters["items"] == 2
    assert sorted(n.url for n in out.new_urls) == ["http://site.example/kept", "http://site.example/own"]


def test_a_function_that_raises_before_returning_keeps_nothing() -> None:
    out = run(make_page(b"<a href='/own'>o</a>", url="http://site.example/p"), extract=_spider("raise_after_building"))
    assert out.record.error == "extract-error" and out.items == [] and "items" not in out.counters
    assert [n.url for n in out.new_urls] == ["http://site.example/own"]  # its page's links, as with no extraction


def test_a_looping_callback_is_stopped_at_the_time_limit() -> None:
    ctx = extract_ctx(extract=_spider("loop_on_some"), extract_timeout=0.2)
    out = process_page(make_page(b"<h1>x</h1>", url=_failing_page("loop_on_some", 1)), ctx)
    assert out.record.error == "extract-error"
    assert out.record.error_detail == "extraction ran past --extract-timeout 0.2s"
    after = process_page(make_page(b"<h1>y</h1>", url=_failing_page("loop_on_some", 0)), ctx)
    assert after.record.error is None and after.items == [{"h1": "y"}]


@pytest.mark.parametrize(
    ("spider", "detail"),
    [("not_json", "not JSON serialisable"), ("bad_yield", "the callback gave a int, not a dict")],
)
def test_items_that_are_not_json_objects_are_extract_errors(spider: str, detail: str) -> None:
    out = run(make_page(b"<h1>x</h1>"), extract=_spider(spider))
    assert out.record.error == "extract-error" and detail in out.record.error_detail and out.items == []


def test_a_yielded_none_is_passed_over_as_scrapy_does() -> None:
    """A ported spider's ``yield self.parse_row(row)`` (None for a row it skips) made every such page an
    extract-error ("the callback gave a NoneType"), counted against --alert-error-rate; Scrapy passes None over."""
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("yields_none"))
    assert out.record.error is None, out.record.error_detail
    assert out.items == [{"n": 1}, {"n": 3}] and out.counters["items"] == 2


def test_a_value_that_is_no_json_item_is_left_out_alone() -> None:
    """A ``yield 42`` or an item with an object in it lost the page's every item, as Scrapy does not (it logs the
    value and goes on); the page's error names the first."""
    import inspect

    from tests.extract import spiders

    line = inspect.getsource(spiders).splitlines().index("    yield 42", 100) + 1
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("some_bad_values"))
    assert out.items == [{"n": 1}, {"n": 2}] and out.counters["items"] == 2
    assert out.record.error_detail == (
        f"UserCodeError: the callback gave a int, not a dict, Follow or URL string (spiders.py:{line})"
    )


def test_items_of_the_classes_scrapy_projects_declare_are_items() -> None:
    """attrs classes, pydantic models and msgspec Structs (itemadapter takes the first two) were each a page's
    extract-error ("the callback gave a Model")."""
    pytest.importorskip("pydantic")  # a dependency of the wacz extra's, not of webtrawl's (attrs is aiohttp's)
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("item_classes"))
    assert out.record.error is None
    assert out.items == [
        {"kind": "dataclass"},
        {"kind": "attrs", "tags": ["a"]},
        {"kind": "pydantic", "price": 1.5},
        {"kind": "struct", "inner": {"n": 1}},
    ]


def test_a_returned_pydantic_model_is_one_item() -> None:
    """A pydantic model iterates as its (name, value) pairs: one returned, not yielded, was taken for the callback's
    values, the item lost and the page an extract-error ("the callback gave a tuple")."""
    pytest.importorskip("pydantic")
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("returned_model"))
    assert out.record.error is None, out.record.error_detail
    assert out.items == [{"kind": "returned", "price": 2.5}]


def test_an_item_is_stored_as_it_was_when_yielded() -> None:
    """Items were copied one level deep when yielded and encoded after the callback ended: a list or dict inside
    one dict yielded again and again held its last state in every item (three times a, b, c)."""
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("reused_item"))
    assert out.items == [
        {"tags": ["a"], "specs": {"rows": 1}},
        {"tags": ["a", "b"], "specs": {"rows": 2}},
        {"tags": ["a", "b", "c"], "specs": {"rows": 3}},
    ]


def test_an_item_field_that_is_not_json_is_named_and_a_selection_says_to_take_its_get() -> None:
    """``{"title": page.css("title::text")}`` without ``.get()`` said only "Encoding objects of type LexborSelector
    is unsupported", naming neither the field nor what to do."""
    out = run(make_page(b"<title>t</title><h1>x</h1>"), extract=_spider("selection_item"))
    assert out.record.error_detail == (
        "UserCodeError: an item is not JSON serialisable: field 'title' is a selection (SelectorList): "
        "take its .get() or .getall()"
    )
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("not_json"))
    assert out.record.error_detail == (
        "UserCodeError: an item is not JSON serialisable: field 'when': Encoding objects of type object is unsupported"
    )


def test_following_a_selection_says_page_follow_takes_one() -> None:
    """``Follow(page.css("a")[0])`` said only "not a LexborSelector"; ``page.follow()`` (Scrapy's
    ``response.follow``) is what takes a selection."""
    out = run(make_page(b"<a href='/next'>n</a>"), extract=_spider("follow_selection"))
    assert str(out.record.error_detail).startswith(
        "UserCodeError: Follow wants a URL string, not a LexborSelector: page.follow() takes a selection (its href)"
    )


def test_an_error_raised_in_a_library_the_callback_called_names_the_callbacks_line() -> None:
    """``page.css("a[href=")`` was recorded at cssselect's ``parser.py:889``, a line of no use to the user, and
    every bad selector of every callback shared it, so only the first was ever logged."""
    import inspect

    from tests.extract import spiders

    line = inspect.getsource(spiders).splitlines().index('    yield {"link": page.css("a[href=").get()}') + 1
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("bad_selector"))
    assert out.record.error_detail.startswith("SelectorSyntaxError: ")
    assert out.record.error_detail.endswith(f" (spiders.py:{line})")


def test_scrub_pii_masks_items() -> None:
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("contacts"), scrub_pii=True)
    assert out.items == [{"who": "Mail [email] or call [phone]", "n": 3, "on": "2019-11-19"}]


def test_a_bad_yield_is_reported_at_the_users_yield_without_our_traceback(caplog: pytest.LogCaptureFixture) -> None:
    """'the callback gave a int' said (callback.py:86), a line of webtrawl's, and logged webtrawl's own frames;
    every such error of every callback shared that place, so only the first of them was ever logged."""
    import inspect

    from tests.extract import spiders

    line = inspect.getsource(spiders).splitlines().index("    yield 42") + 1
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("bad_yield"))
    assert (
        out.record.error_detail
        == f"UserCodeError: the callback gave a int, not a dict, Follow or URL string (spiders.py:{line})"
    )
    (logged,) = [r for r in caplog.records if "failed on" in r.getMessage()]
    assert f"(spiders.py:{line})" in logged.getMessage() and "Traceback" not in logged.getMessage()


def test_follow_data_that_is_not_a_dict_is_an_extract_error_even_when_empty() -> None:
    """Follow(url, data=[]) (or "") was followed without a word, as if no data was given; data=[1] was refused."""
    out = run(make_page(b"<h1>p</h1>"), extract=_spider("list_data"))
    assert out.record.error == "extract-error"
    assert str(out.record.error_detail).startswith("UserCodeError: Follow data must be a dict, not a list")


def test_an_item_that_holds_itself_is_left_out_alone_as_the_pages_error() -> None:
    """An item holding itself made msgspec raise RecursionError, which only a UserCodeError was caught for: the page
    was a parser bug (parse-bug record, its every item lost, a webtrawl traceback) instead of its extract-error."""
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("self_referencing_item"))
    assert out.items == [{"n": 1}, {"n": 2}] and out.record.error == "extract-error"
    assert str(out.record.error_detail).startswith("UserCodeError: an item is not JSON serialisable: field 'self'")


def test_a_dataclass_item_holding_a_selection_is_left_out_alone_and_named() -> None:
    """A dataclass item was deep-copied (dataclasses.asdict) before its check: one holding a selection raised a
    pickling TypeError of selectolax's that named neither the field nor .get(), and stopped the callback (its later
    values lost), where a dict item holding one is left out alone with what to do, and where it was yielded."""
    out = run(make_page(b"<h1>x</h1>"), extract=_spider("selection_in_a_dataclass"))
    assert out.items == [{"n": 1}, {"title": "ok", "inner": {"n": 3}}]
    assert re.fullmatch(
        r"UserCodeError: an item is not JSON serialisable: field 'title' is a selection \(SelectorList\): "
        r"take its \.get\(\) or \.getall\(\) \(spiders\.py:\d+\)",
        str(out.record.error_detail),
    )
