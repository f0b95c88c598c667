"""Write the small seed corpora of ``fuzz/corpus/<harness>/`` (run once; the output is committed).

Seeds come from the shared real-page corpus (cut to 16 KB each: libFuzzer mutates small inputs faster) and from
hand-written samples of each format. Usage: ``python fuzz/seeds.py [CORPUS_PAGES_DIR]``.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import sys
import zlib
from pathlib import Path

import brotli
import zstandard

HERE = Path(__file__).resolve().parent
_PAGE = (
    b'<html><head><meta charset="utf-8"><base href="/b/"><title>t</title></head>'
    b'<body><a href="../x?a=1#f">x</a></body></html>'
)
_ROBOTS = [
    b"User-agent: *\nDisallow: /private/\nAllow: /private/ok$\nCrawl-delay: 2\nSitemap: http://fuzz.example/s.xml\n",
    b"user-agent: webtrawl\nuser-agent: other\ndisallow: /*.php$\nallow: /%7Ea/\n\nuser-agent: *\ndisallow: /\n",
    b"\xef\xbb\xbfUser-Agent: WebTrawl/1.0\r\nDisallow: /a*b*c\r\nCrawl-delay: 0.5\r\n# comment\r\n\0/a-b-c",
]
_SITEMAPS = [
    b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://fuzz.example/a</loc>'
    b"<lastmod>2024-01-01</lastmod></url></urlset>",
    b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><sitemap><loc>/s2.xml.gz</loc></sitemap></sitemapindex>',
    b'<rss version="2.0"><channel><item><link>http://fuzz.example/p</link>'
    b'<pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate><guid isPermaLink="false">x</guid></item></channel></rss>',
    b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><link rel="alternate" href="/e"/>'
    b"<updated>2024-01-01T00:00:00Z</updated></entry></feed>",
    b'<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><item rdf:about="http://fuzz.example/r"/></rdf:RDF>',
]
_HEADERS = [
    b"120", b"Wed, 21 Oct 2015 07:28:00 GMT", b"text/html; charset=Shift_JIS", b'text/html; charset="utf-8"; x=y',
    b"gzip, br", b"webtrawl: noindex, nofollow", b"0; url='/next'", b"5;URL=http://[::1]/", b"unavailable_after: 2020",
]  # fmt: skip
_URLS = [
    b"../a/./b/%7e?q=1#f\0http://fuzz.example/dir/page.html", b"//EXAMPLE.com:80/%2e%2E/x", b"http://0x7f.1/",
    b"HTTP://user:pw@[::ffff:127.0.0.1]:8080/a b\0", b"\\\\host\\path", b"http://xn--nxasmq6b.example/\u00e9".decode(
        "latin-1").encode("utf-8"), b"javascript:alert(1)", b"?only\0http://h/a/b?c",
]  # fmt: skip


def _warc(body: bytes, gz: bool) -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    out = io.BytesIO()
    writer = WARCWriter(out, gzip=gz)
    http = StatusAndHeaders(
        "200 OK", [("Content-Type", "text/html"), ("Content-Encoding", "gzip")], protocol="HTTP/1.1"
    )
    record = writer.create_warc_record(
        "http://fuzz.example/w", "response", payload=io.BytesIO(gzip.compress(body, mtime=0)), http_headers=http
    )
    writer.write_record(record)
    return out.getvalue()


def _coded(selector: int, body: bytes) -> bytes:
    return bytes([selector, 0]) + body


def _write(name: str, items: list[bytes]) -> None:
    folder = HERE / "corpus" / name
    folder.mkdir(parents=True, exist_ok=True)
    for item in items:
        (folder / hashlib.sha1(item).hexdigest()).write_bytes(item)


def main(pages_dir: str) -> None:
    pages = [gzip.decompress(p.read_bytes())[:16384] for p in sorted(Path(pages_dir).glob("*.html.gz"))[:8]]
    _write("html", [_PAGE, b"\0text/html; charset=windows-1251\0" + _PAGE, *pages])
    _write("url", _URLS)
    _write("robots", _ROBOTS)
    _write("sitemap", [*_SITEMAPS, gzip.compress(_SITEMAPS[0], mtime=0)])
    _write(
        "decoding",
        [
            _coded(0, gzip.compress(_PAGE, mtime=0)),
            _coded(2, zlib.compress(_PAGE)),
            _coded(3, brotli.compress(_PAGE)),
            _coded(4, zstandard.ZstdCompressor().compress(_PAGE)),
            _coded(0, gzip.compress(b"\0" * 100000, mtime=0)),
        ],
    )
    _write("headers", _HEADERS)
    _write("warc", [_warc(_PAGE, True), _warc(_PAGE, False)])


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/corpus/pages")
