"""Recrawl state: validators, revisit kinds and the adaptive interval."""

from __future__ import annotations

import msgspec

from webtrawl.formats.recrawl import conditional_headers, decode, payload_digest
from webtrawl.messages import RecrawlHint
from webtrawl.parse import process_page
from webtrawl.parse.recrawl import IDENTICAL_PAYLOAD, SERVER_NOT_MODIFIED, iso_time, next_state, sitemap_hint

from .helpers import make_ctx, make_page

BODY = b"<html><title>t</title><a href=/x>x</a></html>"


def _fetched(body: bytes = BODY, status: int = 200, recrawl: str = "", **headers: str) -> tuple[str, int]:
    page = make_page(body, status=status, headers=list(headers.items()))
    page.recrawl = recrawl
    return next_state(page, process_page(page, make_ctx()).record, 100.0, now=1000.0)


def test_a_first_fetch_enters_the_set_with_its_validators_and_the_base_interval() -> None:
    state, due = _fetched(ETag='"v1"', **{"Last-Modified": "Mon, 02 Nov 2026 10:00:00 GMT"})
    parsed = decode(state)
    assert parsed is not None and (parsed.interval_ms, due) == (100_000, 1_100_000)
    assert (parsed.key, parsed.depth, parsed.origin, parsed.rest) == (
        "site.example",
        0,
        "http://site.example",
        "/dir/page.html",
    )
    assert parsed.digest == payload_digest(BODY)
    assert conditional_headers(state) == {"If-None-Match": '"v1"', "If-Modified-Since": "Mon, 02 Nov 2026 10:00:00 GMT"}
    assert _fetched(status=404) == ("", 0) and conditional_headers("") == {}


def test_unchanged_pages_wait_longer_and_changed_ones_shorter_within_bounds() -> None:
    state, _ = _fetched(ETag='"v1"')
    for expected in (200_000, 400_000, 800_000, 800_000):  # 304s: doubled up to 8x the base
        page = make_page(b"", status=304, content_type=None, headers=[("ETag", '"v1"')])
        page.recrawl = state
        out = process_page(page, make_ctx())
        assert out.record.revisit == SERVER_NOT_MODIFIED and out.new_urls == []
        state, _ = next_state(page, out.record, 100.0)
        assert decode(state).interval_ms == expected  # type: ignore[union-attr]
    same = make_page(BODY)
    same.recrawl = state
    out = process_page(same, make_ctx())
    assert out.record.revisit == IDENTICAL_PAYLOAD and out.new_urls == []
    for i, expected in enumerate((400_000, 200_000, 100_000, 50_000, 25_000, 25_000)):  # changed: halved, >= 1/4
        changed = make_page(BODY + b"!" * (i + 1))
        changed.recrawl = state
        out = process_page(changed, make_ctx())
        assert out.record.revisit is msgspec.UNSET and out.new_urls
        state, _ = next_state(changed, out.record, 100.0)
        assert decode(state).interval_ms == expected  # type: ignore[union-attr]


def test_a_page_of_the_set_that_fails_stays_as_it_was_and_one_gone_stays_without_validators() -> None:
    state, _ = _fetched(ETag='"v1"')
    for status in (500, 503, 429, 302, 307, 403):  # a bad round says nothing about the page: same state, same interval
        assert _fetched(b"down", status=status, recrawl=state) == (state, 1_100_000)
    for status in (404, 410, 301, 308):  # gone: asked again less often, and a page back is fetched whole
        gone, due = _fetched(b"gone", status=status, recrawl=state)
        parsed = decode(gone)
        assert parsed is not None and (parsed.interval_ms, due) == (200_000, 1_200_000)
        assert conditional_headers(gone) == {} and parsed.digest == "" and parsed.rest == "/dir/page.html"
        assert decode(_fetched(b"gone", status=status, recrawl=gone)[0]).interval_ms == 400_000  # type: ignore[union-attr]


def test_a_304_keeps_the_copys_date_and_says_when_it_confirmed_it() -> None:
    """The revisit refers to the copy's date; a sitemap lastmod is compared with the last fetch that answered
    (hint.lua reads the state's last field), so a 304 moves that on. A state written before it decodes alike."""
    state, _ = _fetched(ETag='"v1"')
    first = decode(state)
    assert first is not None and first.checked == first.date != ""
    page = make_page(b"", status=304, content_type=None, headers=[("ETag", '"v1"')])
    page.recrawl = state
    record = process_page(page, make_ctx()).record
    record.fetch_time = "2099-01-01T00:00:00.000Z"
    after, _ = next_state(page, record, 100.0)
    again = decode(after)
    assert again is not None and (again.date, again.checked) == (first.date, record.fetch_time)
    assert after.rsplit("\n", 1)[1] == record.fetch_time
    older = "\n".join(state.split("\n")[:9])  # the 9 fields of a crawl made before ``simhash`` and ``checked``
    assert decode(older) == first


def test_a_sitemaps_changefreq_is_the_first_interval_within_bounds_and_lastmod_is_utc() -> None:
    # D = 100 s: hourly is above 8 D, always below D / 4, daily on the bound; no changefreq and no lastmod: no hint
    assert sitemap_hint("http://a.test/x", "hourly", "", 100.0) == RecrawlHint("http://a.test/x", 800_000)
    assert sitemap_hint("http://a.test/x", "always", "", 100.0) == RecrawlHint("http://a.test/x", 25_000)
    assert sitemap_hint("http://a.test/x", "", "", 100.0) is None
    hint = sitemap_hint("http://a.test/x", "", "2026-11-02T12:00:00+02:00", 100.0)
    assert hint == RecrawlHint("http://a.test/x", 0, "2026-11-02T10:00:00.000Z")  # compares with fetch_time
    assert iso_time("2026-11-02") == "2026-11-02T00:00:00.000Z"
    assert iso_time("Mon, 02 Nov 2026 10:00:00 GMT") == "2026-11-02T10:00:00.000Z"  # a feed's pubDate
    assert iso_time("last tuesday") == ""
    # a stranger's sitemap or feed: dates out of any range are no date (they raised OverflowError)
    assert iso_time("0001-01-01T00:00:00+01:00") == iso_time("9999-12-31T23:00:00-05:00") == ""
    assert iso_time("Mon, 02 Nov 25555555555555555555555 10:00:00 GMT") == ""
    # a URL's first fetch starts from its hint (as the recrawl set holds it), bounded by this page's D
    state, due = _fetched(recrawl="~3600000")
    assert decode(state).interval_ms == 800_000 and due == 1_800_000  # type: ignore[union-attr]
    state, _ = _fetched(recrawl="~60000")
    assert decode(state).interval_ms == 60_000  # type: ignore[union-attr]
    assert conditional_headers("~60000") == {}  # a hint has no validators


def test_low_sitemap_priorities_rank_lower_and_hints_only_with_recrawl() -> None:
    rows = "".join(
        f"<url><loc>http://site.example/{name}</loc>{extra}</url>"
        for name, extra in [
            ("lo", "<priority>0.2</priority><changefreq>daily</changefreq>"),
            ("mid", "<priority>0.5</priority><lastmod>2026-01-02</lastmod>"),
            ("none", ""),
        ]
    )
    body = f"<urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>{rows}</urlset>".encode()
    page = make_page(body, content_type="application/xml")
    out = process_page(page, make_ctx())
    assert [(n.url.rsplit("/", 1)[1], n.depth, n.priority) for n in out.new_urls] == [
        ("lo", 0, 1),
        ("mid", 0, -1),
        ("none", 0, -1),
    ]
    assert out.hints == []  # no --recrawl-after: nothing for the recrawl set
    deeper = process_page(make_page(body, content_type="application/xml", depth=2), make_ctx()).new_urls
    assert [n.priority for n in deeper] == [3, -1, -1]  # one level lower than the sitemap's depth, never higher
    ctx = make_ctx()
    ctx.recrawl_after = 86_400.0
    hints = process_page(page, ctx).hints
    assert hints == [
        RecrawlHint("http://site.example/lo", 86_400_000),
        RecrawlHint("http://site.example/mid", 0, "2026-01-02T00:00:00.000Z"),
    ]
