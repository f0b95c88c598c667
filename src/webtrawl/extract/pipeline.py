"""Extraction as the parser runs it on one page: the user's extractor, then main text, then scrubbing.

User code that fails on a page (raises, runs past ``--extract-timeout``, yields what is not a JSON-able dict) makes
that page's record ``error = "extract-error"`` with a short detail; its traceback is logged once per distinct error
(type and place), and the crawl goes on. What a generator callback yielded before it raised is kept (items and
links, as Scrapy keeps them); the page's own links are followed as if there were no extraction, except with a
spider, which follows only what its callbacks yield.
"""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webtrawl.errors import CloseSpider, UserCodeError, raised_at
from webtrawl.extract.base import Closing, Extractor, ExtractResult, RecrawlHints, StartRequest, StartRequests
from webtrawl.extract.callback import is_callback_spec, kept, load_callback
from webtrawl.extract.document import Document
from webtrawl.extract.itemjson import as_stored
from webtrawl.extract.limits import TimeLimit, time_limit
from webtrawl.extract.pii import scrub, scrub_text
from webtrawl.extract.routing import whole_text
from webtrawl.extract.rules import load_rules
from webtrawl.extract.spider import load_spider
from webtrawl.extract.text import check_available, main_text, prepare
from webtrawl.extract.unseen import excluding
from webtrawl.redact import redact
from webtrawl.store.base import PageRecord

if TYPE_CHECKING:
    from webtrawl.config import ExtractionOptions

log = logging.getLogger("webtrawl.extract")

EXTRACT_ERROR = UserCodeError.reason
_MAX_DETAIL = 300
_MAX_LOGGED = 1000


def load_extractor(spec: str) -> Extractor:
    """The extractor ``--extract`` names; :class:`~webtrawl.errors.InputError` (file, line) if it cannot be built."""
    if is_callback_spec(spec) and not Path(spec).is_file():
        return load_callback(spec)
    return load_rules(Path(spec).expanduser())


@dataclass(slots=True)
class Extraction:
    extractor: Extractor | None = None
    text: bool = False
    scrub_pii: bool = False
    timeout: float = 5.0
    text_max_bytes: int = 2 * 1024 * 1024
    markdown: bool = False  # --markdown / --chunks: the record's markdown (and, with text, from the same tree)
    follow_on_error: bool = True  # a page whose extraction failed follows its own links (a spider's: none)
    exclude: str = ""  # --text-exclude: the XPath of the elements left out of the main text
    _logged: set[tuple[str, str]] = field(default_factory=set, init=False)  # errors whose traceback was logged
    closed_by: str = field(default="", init=False)  # the reason of the first CloseSpider a callback raised
    _recrawl: RecrawlHints | None = field(default=None, init=False)  # the extractor, if it gives recrawl intervals

    def __post_init__(self) -> None:
        if isinstance(self.extractor, RecrawlHints):  # asked per page: the protocol test is done once
            self._recrawl = self.extractor

    def run(self, doc: Document, record: PageRecord, *, html: bool = True) -> ExtractResult:
        """Items and links of ``doc``; fills the record's ``items`` and main-text fields, or its extract-error."""
        result = ExtractResult()
        if self.extractor is not None:
            result = self._extract(self.extractor, doc, record)
            record.items = len(result.items)
        if (self.text or self.markdown) and html:
            self._text(doc, record)
        return result

    def _extract(self, extractor: Extractor, doc: Document, record: PageRecord) -> ExtractResult:
        try:
            with time_limit(self.timeout):
                result = extractor.extract(doc)
        except CloseSpider as exc:  # the crawl ends: what was yielded before stays, as in Scrapy
            if not self.closed_by:
                self.closed_by = exc.close_reason or "cancelled"
                log.warning("%s: CloseSpider(%r) on %s: the crawl stops", extractor.name, self.closed_by, doc.url)
            result = self._kept(exc)
        except (Exception, SystemExit, TimeLimit) as exc:  # sys.exit() in a callback: that page's error too
            self._failed(record, exc, doc.url)
            result = self._kept(exc)
        else:
            if result.refused is not None:  # a value the callback yielded, left out alone
                self._failed(record, result.refused, doc.url)
        result.items = self._items(result, record, doc.url)
        return result

    def _items(self, result: ExtractResult, record: PageRecord, url: str) -> list[dict[str, Any]]:
        """The items as stored; one that is not JSON-able is left out alone (the page's error if it has none)."""
        if result.items_as_stored and not self.scrub_pii:
            return result.items
        kept: list[dict[str, Any]] = []
        for item in result.items:
            try:
                kept.append(self._clean(item, result.items_as_stored))
            except UserCodeError as exc:
                if record.error is None:
                    self._failed(record, exc, url)
        return kept

    def _kept(self, exc: BaseException) -> ExtractResult:
        """What a failed page keeps: what its generator callback yielded before it raised (Scrapy's way), else
        nothing; its own links are followed as if there were no extraction, but a spider's page follows only what
        its callback yielded."""
        found = kept(exc)
        if found is None:
            return ExtractResult() if self.follow_on_error else ExtractResult(links=[])
        if not self.follow_on_error and found.links is None:  # a spider following its pages' own links too
            found.links, found.extra_links = found.extra_links, []
        return found

    @property
    def routes_pages(self) -> bool:
        """A spider's: each page goes to the callback its link named (a feed or a sitemap too, unless reached as a
        sitemap: ``--sitemap``), and follows only what its callbacks yield."""
        return not self.follow_on_error

    def close(self, reason: str) -> None:
        """The parser process ends: an extractor that wants to know (a spider's ``closed``) is told; one that
        fails is logged, as a page's callback would be, and the process ends as it would have."""
        if isinstance(self.extractor, Closing):
            try:
                with time_limit(self.timeout):
                    self.extractor.close(reason)
            except (Exception, TimeLimit):
                log.exception("%s: closing it failed", self.extractor.name)

    def start_requests(self) -> list[StartRequest]:
        """A spider's seeds (its start_requests(), by default its start_urls); none for other extractors."""
        return self.extractor.start_requests() if isinstance(self.extractor, StartRequests) else []

    def allowed_domains(self) -> tuple[str, ...]:
        """A spider's ``allowed_domains`` (the only hosts, with their subdomains, its links may lead to); none for
        other extractors."""
        return tuple(getattr(self.extractor, "allowed_domains", ()))

    def sets_recrawl(self) -> bool:
        """Whether the extractor gives some page its own recrawl interval (a rule's recrawl_after)."""
        return self._recrawl is not None and self._recrawl.sets_recrawl

    def recrawl_after(self, url: str, content_type: str) -> float:
        """The recrawl interval (s) the extractor gives the page (a rules file: its first matching rule's), 0 if
        none."""
        return self._recrawl.recrawl_after(url, content_type) if self._recrawl is not None else 0.0

    def _clean(self, item: dict[str, Any], stored: bool) -> dict[str, Any]:
        fields = item if stored else as_stored(item)
        return scrub(fields) if self.scrub_pii else fields

    def _text(self, doc: Document, record: PageRecord) -> None:
        try:
            prepare()  # not on the page's time
            with time_limit(self.timeout):
                found = main_text(doc, self.text_max_bytes, self.markdown, self.exclude)
        except (Exception, TimeLimit) as exc:
            self._failed(record, exc, doc.url, what="main text")
            return
        if self.markdown:
            record.markdown = scrub_text(found.markdown) if self.scrub_pii else found.markdown
        if not self.text:
            return
        text = scrub_text(found.text) if self.scrub_pii else found.text
        record.text, record.text_title, record.author = text, found.title, found.author
        record.date, record.language = found.date, found.language

    def _failed(self, record: PageRecord, exc: BaseException, url: str, what: str = "extraction") -> None:
        if isinstance(exc, TimeLimit):
            detail = f"{what} ran past --extract-timeout {self.timeout:g}s"
            where = ""
        elif isinstance(exc, UserCodeError):  # webtrawl's own check of what the user gave: the user's place
            detail, where = f"{type(exc).__name__}: {exc}", f" ({exc.where})" if exc.where else ""
        else:
            where = f" ({place})" if (place := raised_at(exc)) else ""
            detail = f"{type(exc).__name__}: {exc}"
        record.error = EXTRACT_ERROR
        record.error_detail = whole_text(redact(f"{detail}{where}"))[:_MAX_DETAIL]
        key = (type(exc).__name__, where)
        if key not in self._logged and len(self._logged) < _MAX_LOGGED:
            self._logged.add(key)
            plain = isinstance(exc, TimeLimit | UserCodeError)  # no traceback of webtrawl's own frames
            tb = "" if plain else "".join(traceback.format_exception(exc)).rstrip()
            log.error(
                "%s failed on %s: %s (logged once per distinct error)%s",
                what,
                redact(url),
                record.error_detail,
                f"\n{tb}" if tb else "",
            )


def absolute_spec(spec: str) -> str:
    """``--extract`` with its file made absolute (a resume from another directory finds it again)."""
    if not spec:
        return spec
    if Path(spec).expanduser().is_file():
        return str(Path(spec).expanduser().resolve())
    target, sep, name = spec.rpartition(":")
    if sep and target.endswith(".py") and Path(target).expanduser().is_file():
        return f"{Path(target).expanduser().resolve()}:{name}"
    return spec


def build_extraction(opts: ExtractionOptions) -> Extraction | None:
    """What the options ask for, built in this process; None without --extract and --text."""
    if not opts.enabled():
        return None
    if opts.main_text():
        check_available("--text" if opts.text else "--markdown" if opts.markdown else "--chunks or --changes")
    extractor: Extractor | None = None
    if opts.spider:
        extractor = load_spider(opts.spider, opts.spider_arg)
    elif opts.extract:
        extractor = load_extractor(opts.extract)
    follow = not opts.spider
    text = opts.text or opts.changes  # a change's text_diff is of the main text
    markdown = opts.markdown or opts.chunks > 0
    exclude = excluding(opts.text_exclude)
    return Extraction(
        extractor, text, opts.scrub_pii, opts.extract_timeout, opts.text_max_bytes, markdown, follow, exclude
    )
