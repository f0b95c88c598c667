"""Sitemaps (sitemaps.org: ``urlset``, ``sitemapindex``, gzip-compressed) and RSS/Atom feeds: the URLs they list.

A site's sitemap is the cheapest complete list of its URLs, including pages no link reaches. The body is read as a
stream: a gzip file is inflated in 64 KiB steps and fed to an incremental XML parser (expat, which refuses entity
expansion attacks since 2.4), and every finished entry is removed from the tree at once, so memory stays flat
whatever the file's size. Reading stops at the protocol's caps (50,000 URLs, 50 MB uncompressed per file); whatever
came before the cap, or before broken XML, is kept. A body whose first element is not one of these formats is not
a sitemap (``parse`` returns None) and is treated as any other page.

Text sitemaps (sitemaps.org: UTF-8, one absolute URL per line, the same caps) have no markup to recognise them by,
so only a URL reached as a sitemap (robots.txt ``Sitemap:``, ``--sitemap``, a sitemap index) is read as one
(``parse_text``); any other text/plain page stays a page.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
import zlib
from collections.abc import Iterator
from typing import cast

import msgspec

from webtrawl.decompress import GZIP_MAGIC, GZIP_TYPES

MAX_URLS = 50_000  # sitemaps.org: at most 50,000 URLs per file
MAX_BYTES = 50 * 1024 * 1024  # and at most 50 MB (52,428,800 bytes) uncompressed
_STEP = 64 * 1024
_BOM = b"\xef\xbb\xbf"
_BLANKS = b" \t\r\n"
# binary/octet-stream: what Amazon S3 serves a file uploaded without a type (often a sitemap.xml.gz)
_XML_TYPES = frozenset(
    {
        "text/xml", "application/xml", "application/rss+xml", "application/atom+xml", "application/rdf+xml",
        "application/gzip", "application/x-gzip", "application/x-gzip-compressed", "application/octet-stream",
        "binary/octet-stream", "text/plain", "",
    }
)  # fmt: skip
_ROOTS = {"urlset": "urlset", "sitemapindex": "index", "rss": "rss", "feed": "atom", "rdf": "rss"}
_ENTRIES = frozenset({"url", "sitemap", "item", "entry"})
_CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})


class SitemapEntry(msgspec.Struct, frozen=True):
    """One listed URL with the hints the protocol gives for it (kept as written; empty when absent)."""

    url: str
    lastmod: str = ""
    changefreq: str = ""
    priority: float | None = None
    sitemap: bool = False  # a child sitemap of a sitemap index, not a page


class Sitemap(msgspec.Struct):
    kind: str  # urlset, index, rss, atom, text
    entries: list[SitemapEntry]
    capped: bool = False  # reading stopped at MAX_URLS or MAX_BYTES
    broken: bool = False  # the XML (or the gzip stream) was broken; the entries before the fault are kept


def may_be_sitemap(payload: bytes, mime: str) -> bool:
    """Cheap test before parsing: an XML-ish or gzip type (or none) and a body that starts like XML or gzip."""
    if mime not in _XML_TYPES:
        return False
    if payload[:2] == GZIP_MAGIC:
        return True
    head = payload[:512].lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"<")


class _Body:
    """The body in steps, inflated if it is gzip, at most ``max_bytes`` of XML; ``cut`` tells whether more followed."""

    def __init__(self, payload: bytes, max_bytes: int) -> None:
        self.payload, self.max_bytes, self.cut = payload, max_bytes, False

    def __iter__(self) -> Iterator[bytes]:
        payload, cap = self.payload, self.max_bytes
        if payload[:2] != GZIP_MAGIC:
            self.cut = len(payload) > cap
            for i in range(0, min(len(payload), cap), _STEP):
                yield payload[i : min(i + _STEP, cap)]
            return
        inflate = zlib.decompressobj(wbits=31)  # raises zlib.error on a broken stream
        total = 0
        data = payload
        while not inflate.eof:
            out = inflate.decompress(data, _STEP)
            data = inflate.unconsumed_tail
            if total + len(out) > cap:
                self.cut = True
                out = out[: cap - total]
            total += len(out)
            if out:
                yield out
            if self.cut or (not data and not out):
                return


def _trimmed(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The chunks without the blank lines some servers put before ``<?xml`` (expat refuses a declaration that is not
    first; ``may_be_sitemap`` skips them too). A UTF-8 byte order mark stays in front."""
    first = True
    for chunk in chunks:
        if first and chunk.startswith(_BOM):
            yield _BOM
            chunk = chunk[len(_BOM) :]
        first = False
        chunk = chunk.lstrip(_BLANKS)
        if chunk:
            yield chunk
            yield from chunks
            return


def _local(tag: str) -> str:
    return tag.rpartition("}")[2].lower()


def _text(elem: ET.Element | None) -> str:
    return (elem.text or "").strip() if elem is not None else ""


def _entry(kind: str, elem: ET.Element) -> SitemapEntry | None:
    children = {_local(child.tag): child for child in reversed(list(elem))}  # the first of each name wins
    if kind in ("urlset", "index"):
        loc = _text(children.get("loc"))
        if not loc:
            return None
        priority: float | None = None
        try:
            value = float(_text(children.get("priority")))
            priority = value if 0.0 <= value <= 1.0 else None
        except ValueError:
            pass
        freq = _text(children.get("changefreq")).lower()
        return SitemapEntry(
            loc,
            lastmod=_text(children.get("lastmod")),
            changefreq=freq if freq in _CHANGEFREQS else "",
            priority=priority,
            sitemap=kind == "index",
        )
    if kind == "atom":
        href = ""
        for child in elem:
            if _local(child.tag) == "link" and child.get("rel", "alternate").strip().lower() == "alternate":
                href = (child.get("href") or "").strip()
                if href:
                    break
        updated = _text(children.get("updated")) or _text(children.get("published"))
        return SitemapEntry(href, lastmod=updated) if href else None
    link = ""
    for child in elem:  # <link>URL</link>, or an Atom-style <link href="URL"/> (some feeds, or next to <link>)
        if _local(child.tag) == "link" and child.get("rel", "alternate").strip().lower() == "alternate":
            link = (child.text or "").strip() or (child.get("href") or "").strip()
            if link:
                break
    if not link:
        guid = children.get("guid")
        if guid is not None and guid.get("isPermaLink", "true").lower() != "false":
            link = _text(guid)
    if not link:  # RSS 1.0: <item rdf:about="...">
        link = next((v for k, v in elem.attrib.items() if _local(k) == "about"), "").strip()
    return SitemapEntry(link, lastmod=_text(children.get("pubdate")) or _text(children.get("date"))) if link else None


def parse(payload: bytes, *, max_urls: int = MAX_URLS, max_bytes: int = MAX_BYTES) -> Sitemap | None:
    """The entries of a sitemap, sitemap index or feed (gzip or not); None if the body is none of them."""
    parser: ET.XMLPullParser[ET.Element] = ET.XMLPullParser(events=("start", "end"))
    stack: list[ET.Element] = []
    out: Sitemap | None = None
    try:
        body = _Body(payload, max_bytes)
        for chunk in _trimmed(iter(body)):
            parser.feed(chunk)
            for event, item in cast(Iterator[tuple[str, ET.Element]], parser.read_events()):
                elem = item
                if event == "start":
                    if out is None:
                        kind = _ROOTS.get(_local(elem.tag))
                        if kind is None:
                            return None
                        out = Sitemap(kind, [])
                    stack.append(elem)
                    continue
                stack.pop()
                if out is None or _local(elem.tag) not in _ENTRIES or not stack:
                    continue
                entry = _entry(out.kind, elem)
                stack[-1].remove(elem)  # done with it: the tree never holds more than one entry
                if entry is not None:
                    out.entries.append(entry)
                    if len(out.entries) >= max_urls:
                        out.capped = True
                        return out
        if out is not None and body.cut:
            out.capped = True
            return out
        parser.close()
    except (ET.ParseError, zlib.error):
        if out is not None:
            out.broken = True
    return out


_TEXT_TYPES = frozenset({"text/plain", "", "application/octet-stream", "binary/octet-stream"})
_URL_STARTS = (b"http://", b"https://")
_MAX_LINE = 64 * 1024  # longer than any URL a crawl keeps (--max-url-length)
TEXT = "text"


def may_be_text_sitemap(payload: bytes, mime: str) -> bool:
    """Cheap test before reading a URL reached as a sitemap as a text one: a plain-text type (or none, or gzip) and
    a body that is gzip or starts with an absolute http(s) URL (not XML, not HTML)."""
    if payload[:2] == GZIP_MAGIC:
        return mime in _TEXT_TYPES or mime in GZIP_TYPES
    return mime in _TEXT_TYPES and payload[:512].lstrip(_BOM + _BLANKS)[:8].lower().startswith(_URL_STARTS)


def parse_text(payload: bytes, *, max_urls: int = MAX_URLS, max_bytes: int = MAX_BYTES) -> Sitemap | None:
    """The URLs of a text sitemap (gzip or not); None if its first line is not an absolute http(s) URL (an XML
    sitemap, an HTML page, a line longer than any URL). A later line that is not one (or is longer than any URL) is
    skipped: ``broken``."""
    out = Sitemap(TEXT, [])
    body = _Body(payload, max_bytes)
    try:
        for line in _lines(body, out):
            if out.broken and not out.entries:
                return None  # the first line was longer than any URL (a minified page, a gzip of anything)
            url = line.strip(_BLANKS).removeprefix(_BOM)
            if not url:
                continue
            if not url[:8].lower().startswith(_URL_STARTS):
                if not out.entries and not out.broken:
                    return None
                out.broken = True
                continue
            out.entries.append(SitemapEntry(url.decode("utf-8", "replace")))
            if len(out.entries) >= max_urls:
                out.capped = True
                return out
        if out.broken and not out.entries:
            return None
    except zlib.error:
        out.broken = True
    out.capped = out.capped or body.cut
    return out


def _lines(body: _Body, out: Sitemap) -> Iterator[bytes]:
    """The body's lines; one longer than :data:`_MAX_LINE` is dropped whole (``out.broken``), so a body without
    newlines costs no more than one with them. A last line the byte cap cut is dropped (a URL cut short)."""
    rest = b""
    skipping = False
    for chunk in body:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        if skipping and lines:
            lines[0], skipping = b"", False  # the end of the overlong line
        if not skipping:
            yield from lines
        if len(rest) > _MAX_LINE:
            rest, skipping, out.broken = b"", True, True
    if rest and not skipping and not body.cut:
        yield rest


def read_sitemap(payload: bytes, mime: str, max_bytes: int, as_sitemap: bool) -> Sitemap | None:
    """The page as a sitemap or feed, recognised by its markup; a URL reached ``as_sitemap`` may be a text one too,
    and is read by its body whatever its type (a PHP script's sitemap goes out as ``text/html`` unless it says
    otherwise; an HTML page's root element is no sitemap's, and it stays a page)."""
    xmlish = may_be_sitemap(payload, mime) or (as_sitemap and may_be_sitemap(payload, ""))
    found = parse(payload, max_bytes=max_bytes) if xmlish else None
    if found is None and as_sitemap and may_be_text_sitemap(payload, mime):
        found = parse_text(payload, max_bytes=max_bytes)
    return found
