"""Discovery beyond <a href>: sitemaps and feeds (streamed, capped, cross-host rule) and more link sources."""

from __future__ import annotations

import dataclasses
import gzip

from tests.extract.helpers import extract_ctx, run
from webtrawl.extract.routing import decode_route, encode_route
from webtrawl.formats.route import MAX_SITEMAP_NESTING, SITEMAP_ROUTE, sitemap_route
from webtrawl.parse import process_page
from webtrawl.parse.html import extract, refresh_target
from webtrawl.parse.sitemap import parse, parse_text

from .helpers import make_ctx, make_page

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _urlset(n: int, host: str = "site.example") -> bytes:
    rows = "".join(f"<url><loc>http://{host}/p/{i}</loc><priority>0.{i % 10}</priority></url>" for i in range(n))
    return f"<?xml version='1.0'?><urlset {NS}>{rows}</urlset>".encode()


def test_sitemap_entries_keep_their_hints() -> None:
    body = (
        f"<urlset {NS}><url><loc> http://a.test/x </loc><lastmod>2026-01-02</lastmod>"
        "<changefreq>Daily</changefreq><priority>0.8</priority></url>"
        "<url><loc>http://a.test/y</loc><priority>7</priority><changefreq>often</changefreq></url></urlset>"
    ).encode()
    found = parse(body)
    assert found is not None and found.kind == "urlset"
    first, second = found.entries
    assert (first.url, first.lastmod, first.changefreq, first.priority) == (
        "http://a.test/x",
        "2026-01-02",
        "daily",
        0.8,
    )
    assert (second.priority, second.changefreq) == (None, "")  # out-of-range values are not kept


def test_sitemap_caps_urls_and_uncompressed_bytes_also_when_gzipped() -> None:
    big = _urlset(50_010)
    for body in (big, gzip.compress(big)):
        found = parse(body)
        assert found is not None and len(found.entries) == 50_000 and found.capped
    small = parse(gzip.compress(big), max_bytes=10_000)
    assert small is not None and small.capped and 0 < len(small.entries) < 200


def test_index_feeds_and_non_sitemaps() -> None:
    index = parse(f"<sitemapindex {NS}><sitemap><loc>http://a.test/s.xml.gz</loc></sitemap></sitemapindex>".encode())
    assert index is not None and index.kind == "index" and index.entries[0].sitemap
    rss = parse(
        b"<rss><channel><item><link>http://a.test/1</link></item><item><guid>http://a.test/2</guid></item>"
        b"<item><guid isPermaLink='false'>x</guid></item></channel></rss>"
    )
    assert rss is not None and [e.url for e in rss.entries] == ["http://a.test/1", "http://a.test/2"]
    atom = parse(
        b"<feed xmlns='http://www.w3.org/2005/Atom'><entry><link rel='self' href='/s'/>"
        b"<link href='http://a.test/e'/></entry></feed>"
    )
    assert atom is not None and [e.url for e in atom.entries] == ["http://a.test/e"]
    assert parse(b"<html><body><urlset></urlset></body></html>") is None
    broken = parse(f"<urlset {NS}><url><loc>http://a.test/1</loc></url><url><loc>http://a".encode())
    assert broken is not None and broken.broken and len(broken.entries) == 1


def test_entity_expansion_is_refused() -> None:
    lol = "<!ENTITY a 'aaaaaaaaaa'>" + "".join(
        f"<!ENTITY {c} '{('&' + p + ';') * 10}'>" for p, c in zip("abcdefg", "bcdefgh", strict=True)
    )
    found = parse(f"<?xml version='1.0'?><!DOCTYPE u [{lol}]><urlset><url><loc>&h;</loc></url></urlset>".encode())
    assert found is None or not found.entries


def test_a_sitemap_page_adds_its_own_hosts_urls_at_its_depth() -> None:
    body = _urlset(3) + b""
    body = body.replace(b"</urlset>", b"<url><loc>http://elsewhere.example/x</loc></url></urlset>")
    page = make_page(
        gzip.compress(body), url="http://site.example/sitemap.xml.gz", content_type="application/gzip", depth=2
    )
    out = process_page(page, make_ctx())
    assert out.record.sitemap == "urlset"
    assert [(u.url, u.depth) for u in out.new_urls] == [(f"http://site.example/p/{i}", 2) for i in range(3)]
    assert out.dropped == [("http://elsewhere.example/x", "sitemap-host")]
    assert out.counters["drop:sitemap-host"] == 1
    off = dataclasses.replace(make_ctx(), sitemaps="off")
    assert process_page(page, off).new_urls == []


def test_blank_lines_before_the_xml_declaration_still_make_a_sitemap() -> None:
    # WordPress themes and plugins often print a newline before <?xml ...?>; expat refuses a declaration that is not
    # first, so such a sitemap was read as a plain page and none of its URLs were queued
    body = _urlset(2)
    for raw in (b"\n\r\n  " + body, b"\xef\xbb\xbf\n" + body):
        for payload, mime in ((raw, "application/xml"), (gzip.compress(raw), "application/gzip")):
            page = make_page(payload, url="http://site.example/sitemap.xml", content_type=mime)
            out = process_page(page, make_ctx())
            assert out.record.sitemap == "urlset", (raw[:8], mime)
            assert [u.url for u in out.new_urls] == ["http://site.example/p/0", "http://site.example/p/1"]


def test_rss_items_whose_link_is_an_href_or_follows_an_atom_self_link() -> None:
    # feeds mixing in Atom: <atom:link rel="self"> before <link> hid the <link> (the first child named link won), and
    # an item whose only link is <link href="..."/> or <atom:link href="..."/> was dropped (no URL queued)
    atom = 'xmlns:atom="http://www.w3.org/2005/Atom"'
    body = (
        f"<rss {atom}><channel><title>t</title>"
        '<item><atom:link rel="self" href="http://a.test/feed/1"/><link>http://a.test/1</link>'
        '<guid isPermaLink="false">id-1</guid></item>'
        '<item><link href="http://a.test/2"/></item>'
        '<item><atom:link href="http://a.test/3"/><guid isPermaLink="false">id-3</guid></item>'
        '<item><link>http://a.test/4</link><enclosure url="http://a.test/4.mp3"/></item>'
        "</channel></rss>"
    ).encode()
    found = parse(body)
    assert found is not None and found.kind == "rss"
    assert [e.url for e in found.entries] == [f"http://a.test/{i}" for i in range(1, 5)]


def test_a_gzip_sitemap_served_with_the_types_storage_services_give_it() -> None:
    # a sitemap.xml.gz uploaded to S3 without a type is served as binary/octet-stream (S3's default), and Windows
    # hosts send application/x-gzip-compressed: such a sitemap was kept as an opaque file, its URLs never queued
    for mime in ("binary/octet-stream", "application/x-gzip-compressed"):
        page = make_page(gzip.compress(_urlset(2)), url="http://site.example/sitemap.xml.gz", content_type=mime)
        out = process_page(page, make_ctx())
        assert out.record.sitemap == "urlset", mime
        assert [u.url for u in out.new_urls] == ["http://site.example/p/0", "http://site.example/p/1"]


def test_a_sitemap_sent_as_html_is_read_when_reached_as_a_sitemap() -> None:
    """A PHP script's sitemap goes out as text/html unless the script says otherwise: named by robots.txt (or an
    index, or --sitemap) it is read by its body, as it was not (an HTML page of no links). Found by a link it stays a
    page, and an HTML page reached as a sitemap (a soft 404) stays one too."""
    url = "http://site.example/sitemap.php"
    for body in (_urlset(2), gzip.compress(_urlset(2))):
        out = process_page(make_page(body, url=url, content_type="text/html", route=SITEMAP_ROUTE), make_ctx())
        assert out.record.sitemap == "urlset"
        assert [u.url for u in out.new_urls] == ["http://site.example/p/0", "http://site.example/p/1"]
    assert not process_page(make_page(_urlset(2), url=url, content_type="text/html"), make_ctx()).record.sitemap
    for soft404 in (b"<!DOCTYPE html><html><a href=/a>a</a></html>", b"<!doctype html><p>gone <a href=/a>a</a>"):
        out = process_page(make_page(soft404, url=url, content_type="text/html", route=SITEMAP_ROUTE), make_ctx())
        assert not out.record.sitemap and [u.url for u in out.new_urls] == ["http://site.example/a"]


def _text_sitemap(n: int, host: str = "site.example") -> bytes:
    return "".join(f"http://{host}/p/{i}\n" for i in range(n)).encode()


def test_a_text_sitemap_reached_as_a_sitemap_adds_its_own_hosts_urls() -> None:
    """sitemaps.org's text format (one URL per line): it was kept as a plain text file, its URLs never queued."""
    body = b"\xef\xbb\xbf" + _text_sitemap(3).replace(b"\n", b"\r\n") + b"\n  \nhttp://elsewhere.example/x\n"
    for payload, mime in ((body, "text/plain"), (gzip.compress(body), "application/gzip"), (body, "")):
        page = make_page(payload, url="http://site.example/sitemap.txt", content_type=mime, route=SITEMAP_ROUTE)
        out = process_page(page, make_ctx())
        assert out.record.sitemap == "text", mime
        assert [(u.url, u.depth, u.route) for u in out.new_urls] == [
            (f"http://site.example/p/{i}", 0, "") for i in range(3)
        ]
        assert out.dropped == [("http://elsewhere.example/x", "sitemap-host")]


def test_a_text_page_of_urls_not_reached_as_a_sitemap_stays_a_page() -> None:
    page = make_page(_text_sitemap(3), url="http://site.example/urls.txt", content_type="text/plain")
    out = process_page(page, make_ctx())
    assert not out.record.sitemap and out.new_urls == [] and out.counters == {"non-html": 1}
    # reached as a sitemap, but it is a page (HTML, or text that is no list of URLs): a page still
    for body, mime in (
        (b"<html><a href=/a>a</a></html>", "text/html"),
        (b"hello\nhttp://site.example/a\n", "text/plain"),
    ):
        marked = make_page(body, url="http://site.example/sitemap.txt", content_type=mime, route=SITEMAP_ROUTE)
        assert not process_page(marked, make_ctx()).record.sitemap, body


def test_a_gzip_body_reached_as_a_sitemap_whose_first_line_is_no_url_stays_a_page() -> None:
    """A gzip file named as a sitemap that holds one long line of markup (a minified page, junk, a bomb of blanks)
    was recorded as a text sitemap of no URLs (and counted a broken sitemap) because that line, longer than any URL,
    was skipped unread; a short first line that is no URL already left the body a page."""
    line = b"<html><body>" + b"<p>minified</p>" * 10_000 + b"</body></html>\nhttp://site.example/a\n"
    assert parse_text(line) is None and parse_text(gzip.compress(line)) is None
    assert parse_text(gzip.compress(b" " * 1_000_000)) is None
    gz = gzip.compress(line)
    page = make_page(gz, url="http://site.example/sitemap.gz", content_type="application/gzip", route=SITEMAP_ROUTE)
    out = process_page(page, make_ctx())
    assert not out.record.sitemap and "sitemaps" not in out.counters and out.new_urls == []


def test_a_sitemap_index_marks_its_sitemaps_so_a_text_one_is_read() -> None:
    index = f"<sitemapindex {NS}><sitemap><loc>http://site.example/s.txt</loc></sitemap></sitemapindex>".encode()
    out = process_page(
        make_page(index, url="http://site.example/index.xml", content_type="application/xml"), make_ctx()
    )
    assert [(u.url, u.route) for u in out.new_urls] == [("http://site.example/s.txt", sitemap_route(1))]
    text = make_page(
        _text_sitemap(2), url="http://site.example/s.txt", content_type="text/plain", route=sitemap_route(1)
    )
    assert process_page(text, make_ctx()).record.sitemap == "text"


def test_sitemap_indexes_nested_without_end_are_read_to_a_bounded_level() -> None:
    """A generated site whose every sitemap index lists another index (index/1.xml lists index/2.xml...) was read
    without end, each at depth 0: --max-depth did not bound it, only --host-budget. Indexes nest up to
    MAX_SITEMAP_NESTING levels; past it an index's sitemaps are dropped ('sitemap-nesting'), its URLs still queued."""
    route, read = SITEMAP_ROUTE, 0
    while read < 3 * MAX_SITEMAP_NESTING:  # (without a bound, without end)
        index = (
            f"<sitemapindex {NS}><sitemap><loc>http://site.example/index/{read + 1}.xml</loc></sitemap></sitemapindex>"
        ).encode()
        page = make_page(
            index, url=f"http://site.example/index/{read}.xml", content_type="application/xml", route=route
        )
        out = process_page(page, make_ctx())
        assert out.record.sitemap == "index"
        read += 1
        if not out.new_urls:
            break
        (child,) = out.new_urls
        assert child.depth == 0
        route = child.route
    assert read == MAX_SITEMAP_NESTING + 1
    assert out.dropped == [(f"http://site.example/index/{read}.xml", "sitemap-nesting")]
    assert out.counters["drop:sitemap-nesting"] == 1
    urlset = process_page(make_page(_urlset(2), url="http://site.example/s.xml", route=route), make_ctx())
    assert [u.url for u in urlset.new_urls] == ["http://site.example/p/0", "http://site.example/p/1"]


def test_a_text_sitemap_is_capped_like_an_xml_one_and_skips_what_is_no_url() -> None:
    big = _text_sitemap(50_010)
    for body in (big, gzip.compress(big)):
        found = parse_text(body)
        assert found is not None and len(found.entries) == 50_000 and found.capped
    cut = parse_text(big, max_bytes=1000)
    assert (
        cut is not None
        and cut.capped
        and [e.url for e in cut.entries] == [f"http://site.example/p/{i}" for i in range(len(cut.entries))]
    )
    mixed = parse_text(b"http://a.test/1\nnot a url\n" + b"x" * 200_000 + b"\nhttp://a.test/2")
    assert (
        mixed is not None and mixed.broken and [e.url for e in mixed.entries] == ["http://a.test/1", "http://a.test/2"]
    )
    assert parse_text(b"<?xml version='1.0'?><urlset/>") is None


def test_link_sources_beyond_anchors() -> None:
    html = b"""<html><head><link rel=canonical href=/c><link rel="alternate" hreflang=de href=/de>
    <link rel=next href=/2><link rel=stylesheet href=/s.css><meta http-equiv=Refresh content="5; URL='/r'">
    <script src=/a.js></script></head><body><iframe src=/f></iframe><img src=/i.png><input type=image src=/b.png>
    <input src=/no.png><a href=/a>a</a></body></html>"""
    found = extract(html, "webtrawl")
    assert [href for href, _ in found.links] == ["/c", "/de", "/2", "/r", "/f", "/a"]
    assert found.requisites == ["/s.css", "/a.js", "/i.png", "/b.png"]
    assert found.canonical == "/c"
    plain = process_page(make_page(html), make_ctx())
    with_requisites = process_page(make_page(html), dataclasses.replace(make_ctx(), requisites=True))
    assert len(with_requisites.new_urls) == len(plain.new_urls) + 4
    only = process_page(make_page(html), dataclasses.replace(make_ctx(), sitemaps="only"))
    assert only.new_urls == []


def test_refresh_targets() -> None:
    assert refresh_target("0; url=http://a.test/") == "http://a.test/"
    assert refresh_target('3;URL="/x y"') == "/x y"
    assert refresh_target("5") == ""
    assert refresh_target("/direct") == "/direct"
    assert refresh_target("1.5, URL = 'a b' ") == "a b"
    assert refresh_target("0;'/unclosed") == "'/unclosed"  # an unmatched quote is part of the URL
    assert refresh_target("0; url=") == ""


def test_a_refresh_response_header_is_a_link_as_a_meta_refresh_is() -> None:
    """``Refresh: 0; url=/next`` (browsers follow it) on an HTML page and on an empty body of no type; the same rules
    as any link of the page: X-Robots-Tag nofollow and --sitemaps only keep it unfollowed."""
    refresh = [("Refresh", "0; url=/next")]
    html = process_page(make_page(b"<html><body>moved</body></html>", headers=refresh), make_ctx())
    empty = process_page(make_page(b"", content_type=None, headers=refresh), make_ctx())
    for out in (html, empty):
        assert [u.url for u in out.new_urls] == ["http://site.example/next"], out.record
        assert out.new_urls[0].depth == 1 and out.record.outlinks == 1
    nofollow = process_page(
        make_page(b"", content_type=None, headers=[*refresh, ("X-Robots-Tag", "nofollow")]), make_ctx()
    )
    assert nofollow.new_urls == [] and nofollow.dropped == [("http://site.example/next", "nofollow")]
    only = process_page(
        make_page(b"", content_type=None, headers=refresh), dataclasses.replace(make_ctx(), sitemaps="only")
    )
    assert only.new_urls == []
    reload = process_page(make_page(b"", content_type=None, headers=[("Refresh", "30")]), make_ctx())
    assert reload.new_urls == []  # a plain reload names no page


def test_a_spiders_feed_or_sitemap_reached_by_a_link_goes_to_the_callback_it_names() -> None:
    """A spider's ``Follow(feed_url, callback="parse_feed")`` (Scrapy hands a callback any answer): the feed was read
    as the crawler's own, its callback never ran, its items were lost and its URLs went to ``parse`` without the
    route. A sitemap reached as one (``--sitemap``) is still read as one."""
    spider = "tests/extract/shop.py:FeedShop"
    feed = b"<?xml version='1.0'?><rss version='2.0'><channel><item><link>http://site.example/p/1</link></item></channel></rss>"
    for body, kind in ((feed, "application/rss+xml"), (_urlset(2), "application/xml")):
        route = encode_route("parse_feed", {"source": "news"})
        page = make_page(body, url="http://site.example/feed", content_type=kind, route=route)
        out = run(page, spider=spider)
        assert not out.record.sitemap and out.record.error is None and out.items
        assert all(item["source"] == "news" for item in out.items)
        assert {decode_route(u.route)[0] for u in out.new_urls} == {"parse_product"}
    listed = process_page(
        make_page(_urlset(2), content_type="application/xml", route=SITEMAP_ROUTE), extract_ctx(spider=spider)
    )
    assert listed.record.sitemap == "urlset" and not listed.items


def test_a_spiders_callback_gets_its_page_whatever_its_content_type() -> None:
    """A JSON file served as ``application/octet-stream`` (as S3 serves one), NDJSON, JSONP: the callback its link
    named was never called (no item, no error), where Scrapy hands a callback any answer."""
    body = b'{"page": 1, "has_next": false, "products": [{"name": "Rake", "category": "Garden", "url": "/p/1"}]}'
    for kind in ("application/octet-stream", "binary/octet-stream", "application/x-ndjson", "application/javascript"):
        page = make_page(body, url="http://shop.test/api/products?page=1", content_type=kind)
        out = run(page, spider="tests/extract/shop.py:ApiShop")
        assert out.record.error is None and out.items == [{"name": "Rake", "category": "Garden", "of": "/p/1"}], kind
