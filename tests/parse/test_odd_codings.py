"""Content-Encoding as servers get it wrong: a body compressed twice under one ``gzip`` (decompress._gzip_again),
a header that names no coding."""

from __future__ import annotations

import gzip
import hashlib

import pytest

from tests.parse.helpers import make_ctx, make_page
from webtrawl.parse import process_page

HTML = b'<html><head><title>Twice</title></head><body><a href="/next">next</a></body></html>'


def test_a_page_compressed_twice_is_read_as_its_html() -> None:
    """curl, wget and browsers decode once and show gzip bytes; the crawl stored a page with no title and no links
    (its text the garbage). The WARC keeps the answer as received; the record is the page's."""
    out = process_page(make_page(gzip.compress(HTML), gzipped=True), make_ctx())
    assert out.record.error is None and out.record.title == "Twice"
    assert [u.url for u in out.new_urls] == ["http://site.example/next"]
    assert out.record.content_hash == "sha1:" + hashlib.sha1(HTML).hexdigest()


def test_a_gzip_file_sent_compressed_is_the_gzip_file() -> None:
    """A .gz download compressed for the transfer: the file is the gzip stream, not what it holds."""
    inner = gzip.compress(HTML)
    out = process_page(make_page(inner, content_type="application/gzip", gzipped=True), make_ctx())
    assert out.record.error is None
    assert out.record.content_hash == "sha1:" + hashlib.sha1(inner).hexdigest()


def test_bytes_that_only_start_like_gzip_are_kept() -> None:
    odd = b"\x1f\x8bnot a gzip stream at all"
    out = process_page(make_page(odd, content_type="text/plain", gzipped=True), make_ctx())
    assert out.record.error is None
    assert out.record.content_hash == "sha1:" + hashlib.sha1(odd).hexdigest()


def test_a_bomb_inside_is_a_bomb() -> None:
    bomb = gzip.compress(gzip.compress(b"\0" * 2_000_000))
    out = process_page(
        make_page(bomb, gzipped=False, headers=[("Content-Encoding", "gzip")]), make_ctx(max_decompressed=1_000_000)
    )
    assert out.record.error == "bomb"


@pytest.mark.parametrize("coding", ["UTF-8", "none", "text/html"])
def test_a_coding_that_is_none_is_passed_over_as_chromium_does(coding: str) -> None:
    """PHP's ``header("Content-Encoding: UTF-8")`` is common: Chromium shows the body as it came ("Unknown encoding
    type. Pass through raw response body"), and the crawl recorded the page as ``bad-content``."""
    out = process_page(make_page(HTML, headers=[("Content-Encoding", coding)]), make_ctx())
    assert out.record.error is None and out.record.title == "Twice"
    assert [u.url for u in out.new_urls] == ["http://site.example/next"]


def test_a_coding_the_crawler_cannot_decode_is_still_bad_content() -> None:
    """``compress`` (LZW) is a coding: its bytes are encoded, and passing them on would store garbage."""
    out = process_page(make_page(HTML, headers=[("Content-Encoding", "compress")]), make_ctx())
    assert out.record.error == "bad-content"
