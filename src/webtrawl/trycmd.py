"""``trawl try``: run a crawl's extraction on saved pages, WARC responses or URLs fetched once, without crawling.

Each input goes through the parser's own ``process_page`` (decompression, decoding, lexbor, extraction, link
filters), so what it prints is what a crawl would store: one JSON line per input with the input, the URL, the status,
the items, the links that would be followed and, with ``--text`` or ``--markdown``, the main text or Markdown; a page
whose extraction failed shows its ``error`` (``extract-error``) and ``error_detail``. A URL is fetched once (no
robots.txt, no retries) under the same address policy as a crawl (``--ip-allow``, ``--ports``), and its redirects
followed as a crawl's are (the same checks, ``--max-redirects``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import msgspec

from webtrawl.addrpolicy import AddressPolicy
from webtrawl.config import CrawlConfig, Limits, add_arguments
from webtrawl.decompress import GZIP_MAGIC
from webtrawl.errors import InputError, UserCodeError, WebtrawlError
from webtrawl.extract import absolute_spec, build_extraction
from webtrawl.extract.routing import decode_route, encode_route
from webtrawl.extract.spider import load_spider
from webtrawl.messages import Page
from webtrawl.parse.process import ParseContext, process_page
from webtrawl.parse.scope import Scope
from webtrawl.trywarc import try_lease, warc_pages

OPTIONS = [
    *(
        "extract",
        "spider",
        "spider_arg",
        "text",
        "markdown",
        "text_exclude",
        "scrub_pii",
        "extract_timeout",
        "text_max_bytes",
        "user_agent",
        "resolve",
    ),
    *("nameservers", "ca_file", "insecure", "ip_allow", "ports", "max_body", "max_decompressed", "max_redirects"),
    *("connect", "total"),
]
_TEXT_FIELDS = ("text", "text_title", "author", "date", "language")
# A saved file's type by its suffix (.gz aside), as a server would send it: a feed or an API's JSON is tried as the
# crawl would get it (parsel's XML parser, a rule's content_type), anything else as HTML.
_SAVED_TYPES = {".xml": "application/xml", ".rss": "application/rss+xml", ".atom": "application/atom+xml"}
_SAVED_TYPES |= {".json": "application/json", ".txt": "text/plain", ".xhtml": "application/xhtml+xml"}
_ENCODER = msgspec.json.Encoder()
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")  # an input that names a URL, not a file
_GZIP_STEP = 1 << 20


def add_arguments_to(parser: argparse.ArgumentParser) -> None:
    saved = "saved pages (.gz too; .xml, .json, .txt as their type, others as HTML) or URLs"
    parser.add_argument("inputs", nargs="*", metavar="FILE_OR_URL", help=saved)
    parser.add_argument("--warc", action="append", default=[], type=Path, metavar="FILE", help="a WARC's responses")
    parser.add_argument("--identity", type=Path, metavar="FILE", help="age identity file for an encrypted --warc")
    parser.add_argument("--url", help="the URL a saved file stands for (default: file://PATH)")
    parser.add_argument("--config", type=Path, help="TOML config file (default: ./trawl.toml if present)")
    parser.add_argument("--callback", help="--spider: the method that handles the inputs (default: parse)")
    parser.add_argument("--data", help="--spider: the inputs' page.data, as a JSON object")
    add_arguments(parser, names=OPTIONS)


def run(ns: argparse.Namespace, out: IO[str] = sys.stdout) -> int:
    flags = {name: getattr(ns, name, None) for name in OPTIONS}
    from webtrawl.cli import load_cli_config

    cfg = load_cli_config(flags, ns.config)
    if not cfg.extraction.enabled():
        raise InputError(
            "trawl try needs --extract RULES_OR_CALLBACK, --spider MODULE:CLASS and/or --text or --markdown"
        )
    if not ns.inputs and not ns.warc:
        raise InputError("give saved HTML files, URLs or --warc FILE")
    _check_inputs(ns)
    ext = cfg.extraction
    cfg = cfg.with_options(extract=absolute_spec(ext.extract), spider=absolute_spec(ext.spider))
    route = _route(ns)
    if ns.callback and not cfg.extraction.spider:
        raise InputError("--callback needs --spider: a --extract callback has no other callbacks")
    extraction = build_extraction(cfg.extraction)
    if ns.callback:
        try:
            # a typo: one line, not an error per input
            load_spider(cfg.extraction.spider, cfg.extraction.spider_arg).callback(ns.callback)
        except UserCodeError as exc:
            raise InputError(f"--callback: {exc}") from None
    ctx = ParseContext(
        limits=cfg.limits,
        politeness=cfg.politeness,
        product_token=cfg.fetch.product_token,
        scope=Scope("any", [], [], [], extraction.allowed_domains() if extraction is not None else ()),
        url_allowed=AddressPolicy(cfg.fetch.ip_allow, cfg.fetch.ports).url_allowed,
        extraction=extraction,
    )
    fetched = {item for item in ns.inputs if _is_url(item)}  # not a WARC's responses: their labels are FILE#URL
    reason = "shutdown"  # Ctrl-C, or an input that cannot be read
    try:
        for label, page in _pages(cfg, ns):
            if route:
                page.lease = msgspec.structs.replace(page.lease, route=route)
            fetch = _fetcher(cfg) if label in fetched else None
            out.write(_line(label, page, ctx, fetch) + "\n")
            out.flush()
        reason = "finished"
    finally:
        if extraction is not None:  # a spider's closed(reason), as at the end of a crawl's parser
            extraction.close(reason)
    return 0


def _check_inputs(ns: argparse.Namespace) -> None:
    """What can be seen before any input is read: a URL that is not http(s), a --url that is not one, an
    --identity without the --warc it would decrypt."""
    from webtrawl.node.seeds import seed_url

    for item in ns.inputs:
        if _SCHEME_RE.match(item) and not _is_url(item) and not Path(item).exists():
            raise InputError(f"{item}: not an http(s) URL (trawl try fetches http and https URLs, reads saved files)")
    if ns.url is not None:
        seed_url(ns.url, "--url")  # the URL a crawl would have fetched the saved file from
    if ns.identity is not None and not ns.warc:
        raise InputError("--identity decrypts an encrypted --warc FILE: give one (saved files and URLs are plain)")


def _line(label: str, page: Page, ctx: ParseContext, fetch: Callable[[str], Page] | None) -> str:
    """The input's JSON line; ``fetch`` (a URL's input): its redirects are followed as a crawl follows them (the
    same checks, --max-redirects, a spider's callback and data kept), and the page they lead to is shown."""
    processed = process_page(page, ctx)
    redirects = []
    while fetch is not None and processed.record.redirect and processed.new_urls:
        redirects.append(page.lease.url)
        new = processed.new_urls[0]
        page = fetch(new.url)
        page.lease = msgspec.structs.replace(page.lease, depth=new.depth, hops=new.hops, route=new.route)
        processed = process_page(page, ctx)
    record = processed.record
    doc: dict[str, Any] = {
        "input": label,
        "url": record.url,
        "status": record.status,
        "items": processed.items,
        "follow": [new.url for new in processed.new_urls],
        "error": record.error,
        "error_detail": record.error_detail,
    }
    if redirects:  # the URLs that redirected, in order, before ``url``
        doc["redirects"] = redirects
    if processed.dropped:  # links not followed, and why (a spider's allowed_domains: scope)
        doc["dropped"] = dict(processed.dropped)
    routes = {new.url: _shown(new.route) for new in processed.new_urls if new.route}
    if routes:  # --spider: the callback and data each followed link carries
        doc["routes"] = routes
    if ctx.extraction is not None and ctx.extraction.text:
        doc.update({name: getattr(record, name, None) for name in _TEXT_FIELDS})
    if ctx.extraction is not None and ctx.extraction.markdown:
        doc["markdown"] = record.markdown
    doc = {k: (None if v is msgspec.UNSET else v) for k, v in doc.items()}  # --text fields a page has not: null
    return _ENCODER.encode(doc).decode()


def _route(ns: argparse.Namespace) -> str:
    """The route ``--callback``/``--data`` give every input, as if its link had been followed with them."""
    if not (ns.callback or ns.data):
        return ""
    try:
        data = json.loads(ns.data) if ns.data else None
    except ValueError as exc:
        raise InputError(f"--data is not JSON: {exc}") from None
    try:
        return encode_route(ns.callback, data)
    except UserCodeError as exc:
        raise InputError(f"--data: {exc}") from None


def _shown(route: str) -> dict[str, Any]:
    callback, data = decode_route(route)
    return {"callback": callback, "data": data}


def _is_url(item: str) -> bool:
    return item.lower().startswith(("http://", "https://"))


def _fetcher(cfg: CrawlConfig) -> Callable[[str], Page]:
    return lambda url: asyncio.run(_fetch_all(cfg, [url]))[url]


def _pages(cfg: CrawlConfig, ns: argparse.Namespace) -> Iterator[tuple[str, Page]]:
    urls = [i for i in ns.inputs if _is_url(i)]
    fetched = asyncio.run(_fetch_all(cfg, urls)) if urls else {}
    for item in ns.inputs:
        yield item, fetched[item] if item in fetched else _file_page(item, ns.url, cfg.limits)
    without = []
    for warc in ns.warc:
        if not (yield from warc_pages(warc, ns.identity, cfg.limits.max_body)):
            without.append(str(warc))
    if without:  # after the other files' responses: one empty file does not hide them
        raise InputError(f"no response records in {', '.join(without)}: trawl try --warc reads a WARC's responses")


def _file_page(item: str, url: str | None, limits: Limits) -> Page:
    """A saved file as the page a fetch would give: cut at --max-body (a huge file, or /dev/zero, is not read
    whole), ``Content-Encoding: gzip`` if it is gzip, which must then decode whole: a file on disk was not cut in
    transfer, and the parser would take what decodes of it (decompress.py) without a word."""
    path = Path(item)
    try:
        with path.open("rb") as stream:
            body = stream.read(limits.max_body + 1)
    except OSError as exc:
        raise InputError(f"cannot read {item}: {exc.strerror or exc}") from None
    truncated = len(body) > limits.max_body
    body = body[: limits.max_body]
    name = path.name.lower().removesuffix(".gz")
    headers = [("Content-Type", _SAVED_TYPES.get(name[name.rfind(".") :] if "." in name else "", "text/html"))]
    if body[:2] == GZIP_MAGIC:
        headers.append(("Content-Encoding", "gzip"))
        broken = "" if truncated else _gzip_fault(body, limits.max_decompressed)
        if broken:
            raise InputError(f"{item}: not a whole gzip file: {broken}")
    target = url or path.resolve().as_uri()
    return Page(
        lease=try_lease(target),
        status=200,
        reason="OK",
        headers=headers,
        body=body,
        truncated=truncated,
        fetch_time=time.time(),
    )


def _gzip_fault(body: bytes, cap: int) -> str:
    """Why a gzip file does not decode to its end ("" if it does, or if it decodes past ``cap``: the parser then
    calls it a bomb). Decoded in steps, output dropped: a bomb costs no memory here."""
    size, data = 0, body
    while True:
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while not inflate.eof and size <= cap:
                chunk = inflate.decompress(data, _GZIP_STEP)
                data = inflate.unconsumed_tail
                if not chunk and not data:
                    return "it is cut short (the file ends inside its compressed data)"
                size += len(chunk)
        except zlib.error as exc:
            return f"broken gzip data ({exc})"
        data = inflate.unused_data
        if size > cap or not data.startswith(GZIP_MAGIC):  # trailing bytes after the last member: ignored, as parsed
            return ""


async def _fetch_all(cfg: CrawlConfig, urls: list[str]) -> dict[str, Page]:
    from webtrawl.extract.hints import RuleHints
    from webtrawl.fetch.client import HttpClient

    pages: dict[str, Page] = {}
    hints = RuleHints.from_config(cfg.extraction, cfg.rendering)  # a rules file's headers are sent as in a crawl
    url_headers = hints.headers if hints and hints.has_headers else None
    async with HttpClient(cfg.fetch, cfg.limits, url_headers=url_headers) as client:
        for url in urls:
            started = time.time()
            try:
                resp = await client.fetch(url)
            except WebtrawlError as exc:
                pages[url] = Page(lease=try_lease(url), error=exc.reason, error_detail=str(exc), fetch_time=started)
                continue
            pages[url] = Page(lease=try_lease(url), **resp.page_fields())
    return pages
