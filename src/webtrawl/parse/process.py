"""One fetched page in; one typed record, the URLs to add and the counters out: the parser's job per page.

Pure function of the page and the context (no I/O), so the parser process can batch freely and the tests can
feed it pages built by hand. Every outcome is a :class:`~webtrawl.store.PageRecord`: fetch failures, policy
refusals, HTTP errors, bombs, non-HTML, redirects and parsed HTML all end in exactly one record of one shape.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from webtrawl.config import Limits, Politeness
from webtrawl.decompress import GZIP_TYPES
from webtrawl.errors import BadContent, DecompressionBomb, HttpError, SitemapHostError, WebtrawlError
from webtrawl.formats.canonical import canonicalize, header_url
from webtrawl.formats.encoding import HTML_TYPES, choose_encoding, content_type_of
from webtrawl.formats.route import MAX_SITEMAP_NESTING, sitemap_level, sitemap_route
from webtrawl.messages import NewUrl, Page, RecrawlHint
from webtrawl.names import DROP_PREFIX, PRIORITY_LEVELS, SITEMAP_NESTING, counter_for
from webtrawl.parse.decompress import content_codings, decompress
from webtrawl.parse.html import extract, header_directives, header_refresh
from webtrawl.parse.links import Links, drop, drop_all, follow_links, follow_page_links, refusal
from webtrawl.parse.record import base_record
from webtrawl.parse.recrawl import revisit_kind, sitemap_hint
from webtrawl.parse.scope import Scope, host_and_port
from webtrawl.parse.simhash import page_text, simhash
from webtrawl.parse.sitemap import MAX_BYTES, Sitemap, read_sitemap
from webtrawl.parse.traps import TrapGuard
from webtrawl.redact import redact
from webtrawl.store.base import Change, Chunk, PageRecord

if TYPE_CHECKING:  # extraction (parsel, lxml) is imported only by parsers that extract
    from webtrawl.extract import Document, Extraction
    from webtrawl.extract.base import ExtractResult

_SNIFF_TYPES = frozenset({"", "unknown/unknown", "application/unknown", "*/*"})
# MIME Sniffing Standard 7.1: a body starting with one of these (then space or '>') is HTML.
_HTML_STARTS = tuple(
    b"<" + t
    for t in (
        b"!doctype html", b"html", b"head", b"script", b"iframe", b"h1", b"div", b"font", b"table", b"a",
        b"style", b"title", b"b", b"body", b"br", b"p", b"!--",
    )
)  # fmt: skip
_WS = b" \t\n\r\x0c"
LOW_SITEMAP_PRIORITY = 0.5  # the protocol's default: a sitemap URL ranked below it is queued one level lower
_TEXTY = re.compile(r"^text/|[/+](?:json|xml)$")  # non-HTML types extraction still sees (APIs, feeds)


@dataclass(slots=True)
class ParseContext:
    limits: Limits
    politeness: Politeness
    product_token: str
    scope: Scope
    url_allowed: Callable[[str, int], str | None] | None = None  # cheap host/port pre-check -> drop reason
    traps: TrapGuard | None = None  # spider-trap guard (stateful: one per parser process)
    # scheme://authority -> url_allowed's verdict, kept across pages (url_allowed depends on host and port only)
    origin_verdicts: dict[str, str | None] = field(default_factory=dict)
    extraction: Extraction | None = None  # --extract / --text (runs user code: one per parser process)
    sitemaps: str = "auto"  # --sitemaps: auto (sitemaps, feeds and links), only (no links of pages), off
    requisites: bool = False  # --requisites: also follow images, scripts and style sheets of HTML pages
    near_duplicates: bool = False  # --near-duplicates: a simhash of each HTML page's main text in its record
    recrawl_after: float = 0.0  # --recrawl-after (s): sitemaps then give recrawl hints

    @property
    def spider(self) -> bool:
        """A spider's crawl: its callbacks route its pages, and the links they yield are its own."""
        return self.extraction is not None and self.extraction.routes_pages

    def recrawl_base(self, url: str, content_type: str = "") -> float:
        """The recrawl interval D of a page (s): its rule's ``recrawl_after``, else --recrawl-after; 0: off."""
        if self.recrawl_after <= 0:
            return 0.0
        ruled = self.extraction.recrawl_after(url, content_type) if self.extraction is not None else 0.0
        return ruled or self.recrawl_after


@dataclass(slots=True)
class Processed:
    record: PageRecord  # the JSONL record
    new_urls: list[NewUrl]
    counters: dict[str, int]  # added to the frontier counters when the URL completes
    warc: bool  # write WARC request/response records for this page
    # (url, reason) of every link not followed: the canonical URL, or the raw href when it has none
    dropped: list[tuple[str, str]] = field(default_factory=list)
    items: list[dict[str, Any]] = field(default_factory=list)  # the fields of each item extraction produced
    hints: list[RecrawlHint] = field(default_factory=list)  # a sitemap's lastmod/changefreq (--recrawl-after)
    chunks: list[Chunk] = field(default_factory=list)  # --chunks: rows (parse/tracking.py fills them per batch)
    changes: list[Change] = field(default_factory=list)  # --changes: the page's change row, if it changed
    # --chunks/--changes: fetched whole, but its main text, items and chunks are those held (a timestamp, an ad)
    same_content: bool = False


def _header_map(headers: list[tuple[str, str]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, value in headers:
        out.setdefault(name.lower(), []).append(value)
    return out


def _fail(record: PageRecord, reason: str, detail: str, warc: bool) -> Processed:
    record.error = reason
    record.error_detail = redact(detail)
    return Processed(record, [], {counter_for(reason): 1}, warc)


def _looks_like_html(payload: bytes) -> bool:
    head = payload[:512].lstrip(_WS).lower()
    return any(head.startswith(start) and head[len(start) : len(start) + 1] in (b" ", b">") for start in _HTML_STARTS)


def process_page(page: Page, ctx: ParseContext) -> Processed:
    """Turn one fetched (or refused) page into its record, new URLs and counters."""
    record = base_record(page)
    headers = _header_map(page.headers)
    content_type = content_type_of(headers.get("content-type", []))
    mime = content_type.split(";", 1)[0].strip().lower()
    record.content_type = mime
    if page.error:
        return _fail(record, page.error, page.error_detail, page.status > 0)
    status = page.status
    if status == 304 and revisit_kind(page):  # a conditional GET of a page in the recrawl set: unchanged
        record.revisit = revisit_kind(page)
        return Processed(record, [], {"revisits": 1}, True)
    if 300 <= status < 400:
        return _redirect(page, ctx, record, headers)
    if not 200 <= status < 300:
        klass = HttpError(status).klass
        return _fail(record, klass, f"HTTP {status} {page.reason}".strip(), True)
    try:
        codings = content_codings(headers.get("content-encoding", []))
        payload = decompress(page.body, codings, ctx.limits.max_decompressed, gzip_inside=mime not in GZIP_TYPES)
    except (DecompressionBomb, BadContent) as exc:
        return _fail(record, exc.reason, str(exc), True)
    if payload:
        record.content_hash = "sha1:" + hashlib.sha1(payload).hexdigest()
    if page.recrawl and revisit_kind(page):  # fetched again, the same payload: its links are known already
        record.revisit = revisit_kind(page)
        return Processed(record, [], {"revisits": 1}, True)
    x_robots = headers.get("x-robots-tag")
    robots = header_directives(x_robots, ctx.product_token) if x_robots else set()
    refresh = header_refresh(headers.get("refresh"))
    if page.dom is not None:  # rendered: links, title and items come from the DOM the scripts built (in UTF-8),
        # but the document's encoding is the HTTP answer's: its links' queries are encoded in it, as a browser does
        document = choose_encoding(payload, content_type)[:2]
        navigations = [(url, False) for url in page.navigations]  # where its scripts sent it: links of the page
        return _html(page, ctx, record, page.dom, "text/html; charset=utf-8", robots, refresh + navigations, document)
    as_sitemap = sitemap_level(page.lease.route) is not None  # reached as one: may be text, or sent as HTML
    # a spider's page goes to the callback its link names whatever its type, as Scrapy hands a callback any answer: a
    # feed or an XML sitemap too (a gzip one, whose text a callback could not read, is still the crawler's)
    if ctx.sitemaps != "off" and (as_sitemap or (mime not in HTML_TYPES and not (ctx.spider and _TEXTY.search(mime)))):
        found = read_sitemap(payload, mime, min(MAX_BYTES, ctx.limits.max_decompressed), as_sitemap)
        if found is not None:
            _set_robots(record, robots)
            return _sitemap(page, ctx, record, found)
    if mime not in HTML_TYPES and not (mime in _SNIFF_TYPES and _looks_like_html(payload)):
        _set_robots(record, robots)
        if ctx.extraction is not None and (ctx.spider or _TEXTY.search(mime)):
            return _extract_other(page, ctx, record, payload, content_type, refresh)
        if refresh and ctx.sitemaps != "only":
            return _refreshed(page, ctx, record, refresh)
        return Processed(record, [], {"non-html": 1}, _storable(record, ctx))
    return _html(page, ctx, record, payload, content_type, robots, refresh)


def _refreshed(page: Page, ctx: ParseContext, record: PageRecord, refresh: Links) -> Processed:
    """A page that is not HTML (often an empty body) whose Refresh header names where to go."""
    counters, dropped = {"non-html": 1}, list[tuple[str, str]]()
    new_urls = follow_page_links(page, ctx, record.nofollow, page.lease.url, refresh, counters, dropped)
    record.outlinks = len(new_urls)
    return Processed(record, new_urls, counters, _storable(record, ctx), dropped)


def _document(page: Page, record: PageRecord, text: str | bytes, body: bytes, tree: Any = None) -> Document:
    from webtrawl.extract import Document

    return Document(
        url=page.lease.url,
        final_url=record.final_url,
        status=page.status,
        headers=page.headers,
        content_type=record.content_type,
        depth=page.lease.depth,
        text=text,
        body=body,
        tree=tree,
        route=page.lease.route,
    )


def _extract_other(
    page: Page, ctx: ParseContext, record: PageRecord, payload: bytes, content_type: str, refresh: Links
) -> Processed:
    """A JSON, XML or text page with extraction on: the user's code sees its decoded text (no main text)."""
    assert ctx.extraction is not None
    codec, source, bom = choose_encoding(payload, content_type)
    record.encoding, record.encoding_source = codec, source
    doc = _document(page, record, payload[bom:].decode(codec, "replace"), payload)
    result = ctx.extraction.run(doc, record, html=False)
    counters = {"non-html": 1}
    _count_extraction(record, counters)
    links = [(href, False) for href in (result.links if result.links is not None else result.extra_links)]
    if result.links is None and ctx.sitemaps != "only":
        links += refresh
    dropped: list[tuple[str, str]] = []
    new_urls = (
        follow_links(page, ctx, page.lease.url, links, counters, dropped, _ranking(result), _routing(result))
        if links and not record.nofollow
        else []
    )
    record.outlinks = len(new_urls)
    return Processed(record, new_urls, counters, _storable(record, ctx), dropped, result.items)


def _ranking(result: ExtractResult) -> Callable[[str], int] | None:
    """The extraction's link priorities (a rule's or callback's), None when it gave none."""
    return result.priority_of if result.priorities or result.link_priority >= 0 else None


def _routing(result: ExtractResult) -> Callable[[str], str] | None:
    """The routes (a spider's callbacks and data) of the extraction's links, None when it gave none."""
    return result.route_of if result.routes or result.link_route else None


def _count_extraction(record: PageRecord, counters: dict[str, int]) -> None:
    if record.error is not None:
        counters[counter_for(record.error)] = 1
    if isinstance(record.items, int) and record.items:
        counters["items"] = record.items


def _storable(record: PageRecord, ctx: ParseContext) -> bool:
    """noindex (when honoured) keeps the page out of the WARC; its JSONL record still says what happened."""
    return not (record.noindex and ctx.politeness.honor_noindex)


def _set_robots(record: PageRecord, robots: set[str]) -> None:
    record.noindex = "noindex" in robots
    record.nofollow = "nofollow" in robots


def _html(
    page: Page,
    ctx: ParseContext,
    record: PageRecord,
    payload: bytes,
    ctype: str,
    robots: set[str],
    extra: Links,
    document: tuple[str, str] | None = None,
) -> Processed:
    """``extra``: links besides the document's (the Refresh header's, a rendered page's script navigations);
    ``document``: (codec, source) of the page when ``payload`` is not its own bytes (a rendered DOM)."""
    codec, source, bom = choose_encoding(payload, ctype)
    # lexbor reads bytes as UTF-8 (bad bytes become U+FFFD): skip a decode + re-encode for most of the web.
    doc: bytes | str = payload[bom:] if codec == "utf-8" else payload[bom:].decode(codec, "replace")
    found = extract(doc, ctx.product_token)
    robots |= found.robots
    _set_robots(record, robots)
    record.title = found.title
    codec, source = document or (codec, source)  # links' queries are encoded in the document's encoding
    record.encoding = codec
    record.encoding_source = source
    url = page.lease.url
    base = url
    if found.base:
        with contextlib.suppress(WebtrawlError):
            base = canonicalize(found.base, url, codec)
    if found.canonical:
        with contextlib.suppress(WebtrawlError):
            canonical = canonicalize(found.canonical, base, codec)
            # past --max-url-length it is no URL of the crawl's (its link is dropped as url-too-long), and a page's
            # record would hold as many bytes as its <link> (one of 100 KB made a 100 KB JSONL line)
            record.canonical = canonical if len(canonical) <= ctx.limits.max_url_length else ""
    counters = {"pages": 1}
    links = found.links + extra if extra else found.links
    tree = found.tree
    if ctx.requisites and found.requisites:
        links = links + [(src, False) for src in found.requisites]
    items: list[dict[str, Any]] = []
    ranking: Callable[[str], int] | None = None
    routing: Callable[[str], str] | None = None
    if ctx.extraction is not None:
        result = ctx.extraction.run(_document(page, record, doc, payload, found.tree), record)
        found.tree = None
        items = result.items
        ranking, routing = _ranking(result), _routing(result)
        _count_extraction(record, counters)
        if result.links is not None:  # the rule's or callback's choice; an <a rel=nofollow> among them stays so
            rel_nofollow = dict(links)
            links = [(href, rel_nofollow.get(href, False)) for href in result.links]
        elif result.extra_links:
            links = links + [(href, False) for href in result.extra_links]
    if ctx.near_duplicates:
        main = record.text if isinstance(record.text, str) and record.text else page_text(tree)
        value = simhash(main)
        if value is not None:
            record.simhash = f"{value:016x}"
    dropped: list[tuple[str, str]] = []
    if ctx.sitemaps == "only":  # only sitemaps and feeds discover URLs: links of pages are not looked at
        links = []
    new_urls = follow_page_links(page, ctx, record.nofollow, base, links, counters, dropped, ranking, routing, codec)
    record.outlinks = len(new_urls)
    return Processed(record, new_urls, counters, _storable(record, ctx), dropped, items)


def _sitemap(page: Page, ctx: ParseContext, record: PageRecord, found: Sitemap) -> Processed:
    """A sitemap, sitemap index or feed: its URLs are added at the sitemap's own depth (they are the site's own
    list, like seeds), but only those of the sitemap's host (the protocol's cross-submission rule). A URL the site
    ranks below LOW_SITEMAP_PRIORITY goes one level lower (1 for a sitemap at depth 0: with the seeds' links, still
    before deeper pages); with --recrawl-after,
    lastmod and changefreq become hints for the recrawl set."""
    record.sitemap = found.kind
    counters = {"sitemaps": 1}
    if found.capped:
        counters["sitemaps-capped"] = 1
    if found.broken:
        counters["sitemaps-broken"] = 1
    dropped: list[tuple[str, str]] = []
    if record.nofollow and ctx.politeness.honor_nofollow:
        drop_all(page.lease.url, page.lease.url, [(e.url, False) for e in found.entries], "nofollow", dropped)
        counters[DROP_PREFIX + "nofollow"] = len(dropped)
        return Processed(record, [], counters, _storable(record, ctx), dropped)
    url = page.lease.url
    own_host = host_and_port(url)[0]
    nesting = sitemap_level(page.lease.route) or 0
    seen = {url}
    out: list[NewUrl] = []
    hints: list[RecrawlHint] = []
    for entry in found.entries:
        try:
            target = canonicalize(entry.url, url)
        except WebtrawlError as exc:
            drop(counters, exc.reason, dropped, entry.url)
            continue
        if target in seen:
            continue
        seen.add(target)
        if host_and_port(target)[0] != own_host:
            reason: str | None = SitemapHostError.reason
        else:  # no trap guard: a sitemap is the site's own finite list (the host budget still bounds it)
            reason = refusal(target, ctx.limits.max_url_length, ctx.scope, ctx.url_allowed, ctx.origin_verdicts)
        if reason is not None:
            drop(counters, reason, dropped, target)
            continue
        depth = page.lease.depth
        low = entry.priority is not None and entry.priority < LOW_SITEMAP_PRIORITY and depth + 1 < PRIORITY_LEVELS
        route = ""
        if entry.sitemap:  # an index's sitemaps are read as such, text ones too; nested indexes up to a level
            if nesting >= MAX_SITEMAP_NESTING:
                drop(counters, SITEMAP_NESTING, dropped, target)
                continue
            route = sitemap_route(nesting + 1)
        out.append(NewUrl(target, depth, 0, depth + 1 if low else -1, route))
        if ctx.recrawl_after > 0 and (entry.changefreq or entry.lastmod) and not entry.sitemap:
            hint = sitemap_hint(target, entry.changefreq, entry.lastmod, ctx.recrawl_base(target))
            if hint is not None:
                hints.append(hint)
    record.outlinks = len(out)
    return Processed(record, out, counters, _storable(record, ctx), dropped, hints=hints)


def _redirect(page: Page, ctx: ParseContext, record: PageRecord, headers: dict[str, list[str]]) -> Processed:
    """A 3xx goes back to the frontier as a new URL (same depth, one more hop), never followed in place."""
    locations = headers.get("location")
    if not locations or not locations[0].strip():
        return _fail(record, HttpError(page.status).klass, f"HTTP {page.status} without Location", True)
    try:
        target = canonicalize(header_url(locations[0]), page.lease.url)
    except WebtrawlError as exc:
        return _fail(record, exc.reason, f"Location {locations[0][:200]!r}: {exc}", True)
    record.redirect = target
    record.final_url = target
    counters = {"redirects": 1}
    dropped: list[tuple[str, str]] = []
    hops = page.lease.hops + 1
    if hops > ctx.limits.max_redirects:
        drop(counters, "redirect-limit", dropped, target)
        return Processed(record, [], counters, True, dropped)
    reason = refusal(target, ctx.limits.max_url_length, ctx.scope, ctx.url_allowed, ctx.origin_verdicts)
    if reason is None and ctx.traps is not None:
        reason = ctx.traps.check(target)
    if reason is not None:
        drop(counters, reason, dropped, target)
        return Processed(record, [], counters, True, dropped)
    # the target is the same page for the user's code: it keeps the spider's callback and data
    return Processed(record, [NewUrl(target, page.lease.depth, hops, route=page.lease.route)], counters, True)
