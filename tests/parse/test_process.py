"""process_page: every kind of page ends as one record with the right counters and new URLs."""

from __future__ import annotations

import gzip
import hashlib
import random
import time
import zlib

import msgspec
import pytest

from webtrawl.messages import NewUrl
from webtrawl.parse import Scope, process_page
from webtrawl.parse.record import _iso
from webtrawl_testweb import DEFAULT_CORPUS_DIR

from .helpers import URL, make_ctx, make_page

CORPUS = DEFAULT_CORPUS_DIR  # ../shared/corpus beside the checkout (or beside the clone holding it)
RECORD_KEYS = {
    "url", "final_url", "status", "content_type", "bytes", "fetch_time", "elapsed_ms", "depth", "hops",
    "retries", "title", "outlinks", "content_hash", "encoding", "encoding_source", "error", "error_detail",
    "ip", "redirect", "canonical", "noindex", "nofollow", "truncated",
}  # fmt: skip


def _corpus_pages(limit: int) -> list[tuple[str, bytes]]:
    rows = (CORPUS / "urls.tsv").read_text().splitlines()[1 : limit + 1]
    return [
        (url, (CORPUS / "pages" / f"{page_id}.html.gz").read_bytes())
        for page_id, url in (row.split("\t", 1) for row in rows)
    ]


@pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not present")
def test_real_corpus_pages_yield_titles_and_links() -> None:
    ctx = make_ctx()
    for url, gz in _corpus_pages(12):
        page = make_page(gz, url=url, headers=[("Content-Encoding", "gzip")], depth=2)
        out = process_page(page, ctx)
        rec = out.record
        assert set(msgspec.to_builtins(rec)) == RECORD_KEYS
        assert rec.error is None, rec
        assert rec.title, url
        assert rec.encoding == "utf-8"
        assert rec.bytes == len(gz)
        assert rec.content_hash == "sha1:" + hashlib.sha1(gzip.decompress(gz)).hexdigest()
        assert out.counters["pages"] == 1
        assert len(out.new_urls) == rec.outlinks > 10
        urls = [n.url for n in out.new_urls]
        assert len(set(urls)) == len(urls), "links are de-duplicated within a page"
        assert all(n.depth == 3 and n.hops == 0 for n in out.new_urls)
        assert all(u.startswith(("http://", "https://")) and "#" not in u for u in urls)
        assert out.warc


def test_record_fields_of_a_plain_page() -> None:
    html = (
        b"<html><head><title>  Hello \n World </title>"
        b'<link rel="canonical" href="/canon?x=1#f"></head>'
        b'<body><a href="a.html">a</a><a href="/b">b</a><a href="a.html#part">again</a>'
        b'<map><area href="http://other.example/c"></map></body></html>'
    )
    out = process_page(make_page(html, gzipped=True), make_ctx())
    rec = out.record
    assert rec.url == rec.final_url == URL
    assert rec.status == 200 and rec.content_type == "text/html"
    assert rec.title == "Hello World"
    assert rec.canonical == "http://site.example/canon?x=1"
    assert rec.fetch_time == "2023-11-14T22:13:20.250Z"
    assert (rec.depth, rec.hops, rec.retries, rec.ip) == (0, 0, 1, "127.0.0.1")
    assert rec.content_hash == "sha1:" + hashlib.sha1(html).hexdigest()
    assert [n.url for n in out.new_urls] == [
        "http://site.example/canon?x=1",  # the canonical copy is followed too
        "http://site.example/dir/a.html",
        "http://site.example/b",
        "http://other.example/c",
    ]
    assert rec.outlinks == 4


def test_a_canonical_url_past_the_url_length_limit_is_not_recorded() -> None:
    long_href = "/" + "c" * 100_000
    html = f'<head><link rel="canonical" href="{long_href}"><title>t</title></head>'.encode()
    out = process_page(make_page(html), make_ctx())
    assert out.record.canonical == "" and out.new_urls == []
    assert [reason for _, reason in out.dropped] == ["url-too-long"]
    assert len(msgspec.json.encode(out.record)) < 2000


def test_base_href_is_used_for_links() -> None:
    html = b'<head><base href="https://cdn.example/root/"></head><a href="x">x</a><a href="/y">y</a>'
    out = process_page(make_page(html), make_ctx())
    assert [n.url for n in out.new_urls] == ["https://cdn.example/root/x", "https://cdn.example/y"]


def test_dropped_links_are_counted_by_reason() -> None:
    long_path = "/" + "x" * 300
    html = (
        b'<a href="mailto:a@b.example">m</a><a href="javascript:void(0)">j</a>'
        b'<a href="http://exa mple.com/">bad</a>'
        b'<a href="' + long_path.encode() + b'">long</a>'
        b'<a href="http://site.example:8081/p">port</a>'
        b'<a href="http://out.example/">out of scope</a>'
        b'<a href="/ok">ok</a><a href="#self">self</a>'
    )
    scope = Scope("host", [URL], [], [])

    def url_allowed(host: str, port: int) -> str | None:
        return "port-policy" if port not in (80, 443) else None

    out = process_page(make_page(html), make_ctx(scope=scope, url_allowed=url_allowed, max_url_length=200))
    assert [n.url for n in out.new_urls] == ["http://site.example/ok"]
    assert out.counters == {
        "pages": 1,
        "drop:scheme": 2,
        "drop:bad-url": 1,
        "drop:url-too-long": 1,
        "drop:port-policy": 1,
        "drop:scope": 1,
    }


def test_depth_limit() -> None:
    html = b'<a href="/a">a</a><a href="/b">b</a><a href="/a">a</a>'
    out = process_page(make_page(html, depth=3), make_ctx(max_depth=3))
    assert out.new_urls == []
    assert out.counters == {"pages": 1, "drop:depth": 2}
    assert process_page(make_page(html, depth=3), make_ctx(max_depth=0)).new_urls  # 0: no limit


def test_rel_nofollow_and_meta_nofollow() -> None:
    html = b'<a href="/a" rel="external NoFollow">a</a><a href="/b">b</a>'
    out = process_page(make_page(html), make_ctx())
    assert [n.url for n in out.new_urls] == ["http://site.example/b"]
    assert out.counters["drop:nofollow"] == 1

    html = b'<meta name="ROBOTS" content="noindex, nofollow"><a href="/a">a</a><a href="/b">b</a>'
    out = process_page(make_page(html), make_ctx())
    assert out.new_urls == [] and out.counters["drop:nofollow"] == 2
    assert out.record.noindex and out.record.nofollow
    assert not out.warc, "noindex pages are not archived while honor_noindex is on"


def test_meta_for_our_token_and_for_others() -> None:
    html = b'<meta name="webtrawl" content="none"><a href="/a">a</a>'
    rec = process_page(make_page(html), make_ctx()).record
    assert rec.noindex and rec.nofollow
    html = b'<meta name="googlebot" content="noindex,nofollow"><a href="/a">a</a>'
    out = process_page(make_page(html), make_ctx())
    assert not out.record.noindex and len(out.new_urls) == 1


@pytest.mark.parametrize(
    ("values", "noindex", "nofollow"),
    [
        (["noindex"], True, False),
        (["NoIndex, NoFollow"], True, True),
        (["webtrawl: nofollow"], False, True),
        (["googlebot: noindex"], False, False),
        (["googlebot: noindex, webtrawl: nofollow"], False, True),
        (["unavailable_after: 25 Jun 2010 15:00:00 PST"], False, False),
        (["all", "webtrawl: none"], True, True),
    ],
)
def test_x_robots_tag(values: list[str], noindex: bool, nofollow: bool) -> None:
    headers = [("X-Robots-Tag", v) for v in values]
    out = process_page(make_page(b'<a href="/a">a</a>', headers=headers), make_ctx())
    assert (out.record.noindex, out.record.nofollow) == (noindex, nofollow)
    assert bool(out.new_urls) is not nofollow


def test_fetch_failures_and_policy_refusals() -> None:
    out = process_page(make_page(error="timeout", error_detail="timed out", status=0), make_ctx())
    assert out.record.error == "timeout" and out.record.error_detail == "timed out"
    assert out.counters == {"err:timeout": 1} and not out.warc and out.new_urls == []
    for reason in ("robots", "ip-policy", "port-policy", "scheme", "robots-unavailable", "budget"):
        out = process_page(make_page(error=reason, status=0), make_ctx())
        assert out.counters == {f"drop:{reason}": 1}, reason
        assert set(msgspec.to_builtins(out.record)) == RECORD_KEYS
    out = process_page(make_page(error="something-new", status=0), make_ctx())
    assert out.counters == {"err:something-new": 1}


# a status past 599 is read as a 5xx (RFC 9110 15): LinkedIn's 999 was recorded as an unknown "http-9xx"
HTTP_ERRORS = [(404, "http-4xx"), (410, "http-4xx"), (503, "http-5xx"), (999, "http-5xx"), (600, "http-5xx")]


@pytest.mark.parametrize(("status", "klass"), HTTP_ERRORS)
def test_http_errors_have_no_links(status: int, klass: str) -> None:
    out = process_page(make_page(b'<a href="/a">a</a>', status=status), make_ctx())
    assert out.counters == {f"err:{klass}": 1}
    assert out.record.error == klass and out.record.status == status
    assert out.new_urls == [] and out.warc


def test_redirect_goes_back_to_the_frontier() -> None:
    page = make_page(status=301, headers=[("Location", "../new/place#x")], depth=4, hops=1)
    out = process_page(page, make_ctx())
    target = "http://site.example/new/place"
    assert out.new_urls == [NewUrl(target, depth=4, hops=2)]
    assert out.record.redirect == out.record.final_url == target
    assert out.record.error is None and out.counters == {"redirects": 1} and out.warc


def test_redirect_limit_scope_and_bad_location() -> None:
    page = make_page(status=302, headers=[("Location", "/next")], hops=5)
    out = process_page(page, make_ctx(max_redirects=5))
    assert out.new_urls == [] and out.counters == {"redirects": 1, "drop:redirect-limit": 1}
    assert out.record.redirect == "http://site.example/next"

    page = make_page(status=302, headers=[("Location", "https://elsewhere.example/")])
    out = process_page(page, make_ctx(scope=Scope("host", [URL], [], [])))
    assert out.new_urls == [] and out.counters["drop:scope"] == 1

    out = process_page(make_page(status=302, headers=[("Location", "javascript:alert(1)")]), make_ctx())
    assert out.record.error == "scheme" and out.counters == {"drop:scheme": 1}

    out = process_page(make_page(status=304), make_ctx())
    assert out.record.error == "http-3xx" and out.counters == {"err:http-3xx": 1}


def test_non_html_and_sniffing() -> None:
    out = process_page(make_page(b"%PDF-1.4 ...", content_type="application/pdf"), make_ctx())
    assert out.counters == {"non-html": 1} and out.record.content_type == "application/pdf"
    assert out.record.content_hash and out.record.title == "" and out.warc

    out = process_page(make_page(b"  <!DOCTYPE html><title>T</title><a href=/x>x</a>", content_type=None), make_ctx())
    assert out.counters["pages"] == 1 and out.record.title == "T" and len(out.new_urls) == 1

    out = process_page(make_page(b"just text <a href=/x>", content_type=None), make_ctx())
    assert out.counters == {"non-html": 1}

    headers = [("X-Robots-Tag", "noindex")]
    out = process_page(make_page(b"%PDF", content_type="application/pdf", headers=headers), make_ctx())
    assert out.record.noindex and not out.warc


def test_xhtml_content_type() -> None:
    out = process_page(make_page(b"<html><title>X</title></html>", content_type="application/xhtml+xml"), make_ctx())
    assert out.record.title == "X" and out.counters["pages"] == 1


def test_bomb_and_broken_body() -> None:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = c.compress(bytes(4 * 1024 * 1024)) + c.flush()
    page = make_page(bomb, headers=[("Content-Encoding", "gzip")])
    out = process_page(page, make_ctx(max_decompressed=1024 * 1024))
    assert out.record.error == "bomb" and out.counters == {"err:bomb": 1}
    assert out.warc, "the raw response is still archived"

    page = make_page(b"not gzip", headers=[("Content-Encoding", "gzip")])
    out = process_page(page, make_ctx())
    assert out.record.error == "bad-content" and out.counters == {"err:bad-content": 1}


def test_truncated_body_is_parsed_as_far_as_it_goes() -> None:
    html = b"<title>Cut</title>" + b"".join(b'<a href="/p%d">p</a>' % i for i in range(2000))
    body = gzip.compress(html)
    page = make_page(body[: len(body) // 2], headers=[("Content-Encoding", "gzip")], truncated=True)
    out = process_page(page, make_ctx())
    assert out.record.truncated and out.record.error is None
    assert out.record.title == "Cut" and 0 < len(out.new_urls) < 2000


def test_fetch_time_equals_a_strftime_per_page() -> None:
    rng = random.Random(7)
    stamps = [1_700_000_000 + rng.random() * 5 for _ in range(300)] + [1_700_000_000.9995, 1_700_000_001.0, 0.5]
    for ts in stamps:
        expected = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts * 1000) % 1000:03d}Z"
        assert _iso(ts) == expected
