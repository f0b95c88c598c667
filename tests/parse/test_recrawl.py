"""Recrawl state: validators, revisit kinds and the adaptive interval."""

from __future__ import annotations

import msgspec

from webtrawl.parse import process_page
from webtrawl.parse.recrawl import (
    IDENTICAL_PAYLOAD,
    SERVER_NOT_MODIFIED,
    conditional_headers,
    decode,
    next_state,
    payload_digest,
)

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
