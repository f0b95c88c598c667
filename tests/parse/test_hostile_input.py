"""The parse step against hostile input: trap URLs, private addresses in every spelling, secrets in URLs,
legacy encodings, broken HTML. Every link that is not followed comes back with its reason (``Processed.dropped``)."""

from __future__ import annotations

import time

import pytest

from webtrawl.fetch.addrpolicy import AddressPolicy
from webtrawl.parse import process_page
from webtrawl.parse.traps import TrapGuard
from webtrawl.redact import redact
from webtrawl_testweb.chaos import BEHAVIOURS, ChaosWeb

from .helpers import make_ctx, make_page

PAGE = "http://site.example/dir/page.html"


def test_repeated_path_segments_are_a_trap() -> None:
    guard = TrapGuard(max_path_repeats=3, max_query_variants=0)
    assert guard.check("http://h.example/a/a/") is None
    assert guard.check("http://h.example/a/a/a/") == "trap-repeat"
    assert guard.check("http://h.example/x/y/x/y/x/") == "trap-repeat"
    assert guard.check("http://h.example/2024/01/01/") is None  # a date repeats a segment twice at most
    assert guard.check("http://h.example/a/b/c/d/e/f/g/") is None
    assert TrapGuard(0, 0).check("http://h.example/a/a/a/a/") is None  # 0: guard off


def test_query_variants_per_path_are_capped_and_repeats_are_free() -> None:
    guard = TrapGuard(max_path_repeats=0, max_query_variants=3)
    for n in range(3):
        assert guard.check(f"http://h.example/s?sid={n}") is None
    assert guard.check("http://h.example/s?sid=99") == "trap-query"
    assert guard.check("http://h.example/s?sid=1") is None  # a variant already let through is not a new one
    assert guard.check("http://h.example/other?sid=99") is None  # another path has its own count
    assert guard.check("http://g.example/s?sid=99") is None  # and another host
    assert guard.check("http://h.example/s") is None  # no query: not a variant


def test_the_query_guard_forgets_old_paths_instead_of_growing() -> None:
    guard = TrapGuard(0, 1, max_paths=2)
    for n in range(10):
        guard.check(f"http://h.example/p{n}?q=1")
    assert len(guard._variants) == 2


def test_dropped_links_come_back_with_their_reason() -> None:
    html = (
        b'<a href="a/a/a/">trap</a><a href="?sid=1">q1</a><a href="?sid=2">q2</a><a href="?sid=3">q3</a>'
        b'<a href="javascript:void(0)">js</a><a href="/n" rel="nofollow">nf</a><a href="/ok">ok</a>'
        b'<a href="http://public@10.0.0.1/">userinfo trick</a><a href="http://167772161/">decimal</a>'
        b'<a href="http://0xa.0.0.1/">hex</a><a href="http://012.0.0.1/">octal</a>'
        b'<a href="http://[::ffff:10.0.0.1]/">mapped</a><a href="http://10.0.0.1:25/">bad port</a>'
    )
    ctx = make_ctx(url_allowed=AddressPolicy().url_allowed)
    ctx.traps = TrapGuard(3, 2)
    out = process_page(make_page(html, url=PAGE), ctx)
    assert [u.url for u in out.new_urls] == [
        "http://site.example/dir/page.html?sid=1",
        "http://site.example/dir/page.html?sid=2",
        "http://site.example/ok",
    ]
    assert out.dropped == [
        ("http://site.example/dir/a/a/a/", "trap-repeat"),
        ("http://site.example/dir/page.html?sid=3", "trap-query"),
        ("javascript:void(0)", "scheme"),
        ("http://site.example/n", "nofollow"),
        # userinfo trick, decimal, hex and octal: one URL (no userinfo, the address dotted), refused once
        ("http://10.0.0.1/", "ip-policy"),
        ("http://[::ffff:a00:1]/", "ip-policy"),
        ("http://10.0.0.1:25/", "port-policy"),
    ]
    counted = sum(n for k, n in out.counters.items() if k.startswith("drop:"))
    assert counted == len(out.dropped)


def test_redirects_to_private_addresses_and_past_the_limit_are_dropped_with_the_target() -> None:
    ctx = make_ctx(url_allowed=AddressPolicy().url_allowed, max_redirects=2)
    page = make_page(b"", status=302, headers=[("Location", "http://169.254.169.254/latest/meta-data/")])
    assert process_page(page, ctx).dropped == [("http://169.254.169.254/latest/meta-data/", "ip-policy")]
    page = make_page(b"", status=301, hops=2, headers=[("Location", "/next")])
    assert process_page(page, ctx).dropped == [("http://site.example/next", "redirect-limit")]


def test_credentials_in_links_are_neither_followed_nor_recorded() -> None:
    """A stranger's ``user:pass@`` in a link was followed as it was (sent as Basic auth, kept in the records and
    the WARC); now its URL is the one without it, and a dropped href keeps it masked."""
    html = (
        b'<a href="http://user:s3cret@other.example/x">a</a><a href="//s3cret@Site.Example./y">b</a>'
        b'<a href="ftp://user:s3cret@files.example/">ftp</a><a href="http://user:s3cret@exa mple/">bad</a>'
        b'<a href="http://user:s3cret@site.example/n" rel="nofollow">nf</a>'
        b'<link rel="canonical" href="http://user:s3cret@site.example/dir/page.html">'
    )
    out = process_page(make_page(html, url=PAGE), make_ctx())
    assert [u.url for u in out.new_urls] == ["http://other.example/x", "http://site.example/y"]
    assert out.dropped == [
        ("ftp://***@files.example/", "scheme"),
        ("http://***@exa mple/", "bad-url"),
        ("http://site.example/n", "nofollow"),
    ]
    redirect = make_page(b"", status=301, headers=[("Location", "http://user:s3cret@site.example./z")])
    assert [u.url for u in process_page(redirect, make_ctx()).new_urls] == ["http://site.example/z"]


def test_secrets_in_urls_are_masked_in_error_details() -> None:
    assert redact("cannot reach http://user:hunter2@host.example/x") == "cannot reach http://***@host.example/x"
    assert redact("redis://:s3cret@10.0.0.5:6379/0 and https://TOKEN@github.example/") == (
        "redis://***@10.0.0.5:6379/0 and https://***@github.example/"
    )
    assert redact("no secrets at all: a@b") == "no secrets at all: a@b"
    page = make_page(error="connect", error_detail="Cannot connect to http://u:hunter2@h.example:81/")
    record = process_page(page, make_ctx()).record
    assert "hunter2" not in record.error_detail and record.error == "connect"
    page = make_page(error="connect", error_detail="Cannot connect to http://u:p@ss-hunter2@h.example:81/ (a@b)")
    assert process_page(page, make_ctx()).record.error_detail == "Cannot connect to http://***@h.example:81/ (a@b)"


@pytest.mark.parametrize(
    "name", [b.name for b in BEHAVIOURS.values() if b.title and b.scheme == "http" and b.name != "cl-short"]
)
def test_every_chaos_page_decodes_to_its_title_quickly(name: str) -> None:
    """Legacy encodings with and without declarations, lying headers, a BOM, 100k nested divs, a 1 MB attribute."""
    web = ChaosWeb(8000, 8443)
    reply = web.respond(f"{name}.chaos.test", "/")
    page = make_page(reply.body, url=web.url(name), content_type=reply.content_type, headers=list(reply.headers))
    started = time.process_time()
    out = process_page(page, make_ctx())
    assert out.record.title == BEHAVIOURS[name].title
    assert time.process_time() - started < 2.0  # 100k nested <div> took lexbor over a minute before the depth cap
