"""Scrapy's ``CrawlSpider``, ``Rule`` and ``LinkExtractor``, for spiders ported from Scrapy: a spider that says
which links to follow as rules instead of yielding them from its callbacks.

Each rule's link extractor picks links of a page (by URL regexes, domains, a region of the page, tags and
attributes); the page each link leads to goes to the rule's ``callback`` (a method name or the method) with the
rule's ``cb_kwargs``, and, when the rule ``follow``s (by default when it has no callback), the rules are applied to
that page again. A link found by several rules goes with the first. The start URLs are parsed by
``parse_start_url(page)`` (nothing by default) and followed by every rule. As in Scrapy, ``parse`` is the
CrawlSpider's own: do not override it. ``process_request`` and ``errback`` are Scrapy's request hooks, which a
crawl here has no place for: a rule that gives one is refused when the spider is built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

from webtrawl.domains import domain_names, in_domains
from webtrawl.extract.base import Follow
from webtrawl.extract.base import Link as Link  # re-exported: a LinkExtractor's links
from webtrawl.extract.callback import settled, values_of
from webtrawl.extract.page import Page
from webtrawl.extract.spider import Spider, callbacks_of

# Scrapy's LinkExtractor skips links to files that are not pages (its IGNORED_EXTENSIONS): the same kinds here
_ARCHIVES = "7z 7zip apk bz2 cdr dmg ico iso jar rar tar tgz xz zip gz bin exe msi deb rpm"
_IMAGES = "mng pct bmp gif jpg jpeg png pst psp tif tiff ai drw dxf eps ps svg webp avif heic"
_AUDIO_VIDEO = "mp3 wma ogg wav ra aac mid au aiff flac m4a 3gp asf asx avi mov mp4 mpg qt rm swf wmv m4v mkv webm flv"
_DOCUMENTS = "xls xlsx ppt pptx pps doc docx odt ods odg odp pdf css js woff woff2 ttf otf eot"
IGNORED_EXTENSIONS = frozenset(" ".join((_ARCHIVES, _IMAGES, _AUDIO_VIDEO, _DOCUMENTS)).split())
_RULE_KEY = "_rule"  # the data key that says which rule led to a page


def _patterns(value: str | re.Pattern[str] | Iterable[str | re.Pattern[str]]) -> list[re.Pattern[str]]:
    items = [value] if isinstance(value, str | re.Pattern) else list(value)
    return [re.compile(item) if isinstance(item, str) else item for item in items]


def _strings(value: str | Iterable[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


class LinkExtractor:
    """Scrapy's ``LinkExtractor``: the links of a page whose absolute URL matches one of ``allow`` (any when empty)
    and none of ``deny`` (regexes, searched), on ``allow_domains`` (and their subdomains) and not on
    ``deny_domains``, not to a file of ``deny_extensions`` (default :data:`IGNORED_EXTENSIONS`), within the regions
    ``restrict_css`` / ``restrict_xpaths`` select (the whole page when none), whose text matches one of
    ``restrict_text`` (any when empty), from the ``attrs`` of the ``tags``; ``process_value`` may rewrite or drop
    (None) each raw value; ``unique``: each URL once; ``canonicalize`` changes nothing (URLs are canonicalized
    before they are queued)."""

    def __init__(
        self,
        allow: str | re.Pattern[str] | Iterable[str | re.Pattern[str]] = (),
        deny: str | re.Pattern[str] | Iterable[str | re.Pattern[str]] = (),
        allow_domains: str | Iterable[str] = (),
        deny_domains: str | Iterable[str] = (),
        restrict_xpaths: str | Iterable[str] = (),
        restrict_css: str | Iterable[str] = (),
        tags: str | Iterable[str] = ("a", "area"),
        attrs: str | Iterable[str] = ("href",),
        unique: bool = True,
        deny_extensions: Iterable[str] | None = None,
        process_value: Callable[[str], str | None] | None = None,
        strip: bool = True,
        canonicalize: bool = False,
        restrict_text: str | re.Pattern[str] | Iterable[str | re.Pattern[str]] = (),
    ) -> None:
        self.allow, self.deny = _patterns(allow), _patterns(deny)
        self.allow_domains, self.deny_domains = (
            domain_names(_strings(allow_domains)),
            domain_names(_strings(deny_domains)),
        )
        self.restrict_xpaths, self.restrict_css = _strings(restrict_xpaths), _strings(restrict_css)
        self.tags, self.attrs = _strings(tags), _strings(attrs)
        self.unique, self.strip, self.process_value = unique, strip, process_value
        self.canonicalize = canonicalize  # Scrapy's: every URL is canonicalized before it is queued here anyway
        self.restrict_text = _patterns(restrict_text)
        extensions = IGNORED_EXTENSIONS if deny_extensions is None else deny_extensions
        self.deny_extensions = {"." + ext.lower().lstrip(".") for ext in extensions}

    def extract_links(self, page: Page) -> list[Link]:
        found: list[Link] = []
        seen: set[str] = set()
        query = ", ".join(self.tags)
        for region in self._regions(page):
            for element in region.css(query):
                for attr in self.attrs:
                    link = self._link(page, element, attr)
                    if link is None or (self.unique and link.url in seen):
                        continue
                    seen.add(link.url)
                    found.append(link)
        return found

    def matches(self, url: str) -> bool:
        """Whether an absolute URL passes the extractor's URL, domain and extension filters."""
        parts = urlsplit(url)
        host, path = parts.hostname or "", parts.path.lower()
        if self.allow_domains and not in_domains(host, self.allow_domains):
            return False
        if self.deny_domains and in_domains(host, self.deny_domains):
            return False
        if "." in path.rsplit("/", 1)[-1] and "." + path.rsplit(".", 1)[-1] in self.deny_extensions:
            return False
        if self.allow and not any(p.search(url) for p in self.allow):
            return False
        return not any(p.search(url) for p in self.deny)

    def _regions(self, page: Page) -> list[Any]:
        if not (self.restrict_css or self.restrict_xpaths):
            return [page]
        return [
            *(r for q in self.restrict_css for r in page.css(q)),
            *(r for q in self.restrict_xpaths for r in page.xpath(q)),
        ]

    def _link(self, page: Page, element: Any, attr: str) -> Link | None:
        value = element.attrib.get(attr)
        if value is None:
            return None
        value = value.strip() if self.strip else value
        if self.process_value is not None:
            value = self.process_value(value)
            if value is None:
                return None
        url = page.urljoin(value)
        if not url.startswith(("http://", "https://")) or not self.matches(url):
            return None
        text = " ".join(" ".join(element.css("::text").getall()).split())
        if self.restrict_text and not any(p.search(text) for p in self.restrict_text):
            return None
        return Link(url, text, "nofollow" in (element.attrib.get("rel") or "").lower().split())


class Rule:
    """Scrapy's ``Rule``: the links ``link_extractor`` finds (every link of the page when None) go to ``callback``
    (a method name or the method; none: no items) with ``cb_kwargs``; ``follow`` (default: when there is no
    callback) applies the rules to the pages they lead to as well; ``process_links`` may filter or change the
    list of :class:`Link` of a page."""

    def __init__(
        self,
        link_extractor: LinkExtractor | None = None,
        callback: str | Callable[..., Any] | None = None,
        cb_kwargs: dict[str, Any] | None = None,
        follow: bool | None = None,
        process_links: str | Callable[[list[Link]], Iterable[Link]] | None = None,
        process_request: Any = None,
        errback: Any = None,
    ) -> None:
        if process_request is not None or errback is not None:
            hook = "process_request" if process_request is not None else "errback"
            raise TypeError(
                f"Rule({hook}=...) is Scrapy's request hook, which webtrawl has no place for: give headers and "
                "other request options to the crawl, and read failures in the page records"
            )
        self.link_extractor = link_extractor or LinkExtractor()
        self.callback = callback
        self.cb_kwargs = dict(cb_kwargs or {})
        self.follow = callback is None if follow is None else follow
        self.process_links = process_links


class CrawlSpider(Spider):
    """Subclass it with ``rules`` (a sequence of :class:`Rule`) and the callbacks they name."""

    rules: ClassVar[Sequence[Rule]] = ()

    def __init__(self, **args: str) -> None:
        super().__init__(**args)
        for rule in self.rules:
            for hook in (rule.callback, rule.process_links):
                if isinstance(hook, str) and not callable(getattr(self, hook, None)):
                    has = ", ".join(callbacks_of(type(self))) or "none"
                    raise TypeError(
                        f"a rule names {hook!r}, which {type(self).__name__} has no method of (its callbacks: {has})"
                    )

    def parse(self, page: Page) -> Iterator[Any]:
        """The start URLs: ``parse_start_url``, then every rule (Scrapy's CrawlSpider._parse)."""
        yield from values_of(settled(self.parse_start_url(page)))
        yield from self._follow(page)

    def parse_start_url(self, page: Page) -> Iterable[Any]:
        return ()

    def parse_rule(self, page: Page, **data: Any) -> Iterator[Any]:
        """A page a rule's link led to: the rule's callback with its cb_kwargs, then the rules if it follows."""
        rule = self.rules[int(data[_RULE_KEY])]
        if rule.callback is not None:
            callback = self._method(rule.callback)  # an async def one too, as Scrapy runs them (settled)
            kwargs = {key: data[key] for key in rule.cb_kwargs if key in data}
            yield from values_of(settled(callback(page, **kwargs)))
        if rule.follow:
            yield from self._follow(page)

    def _follow(self, page: Page) -> Iterator[Follow]:
        seen: set[str] = set()
        for index, rule in enumerate(self.rules):
            links = [link for link in rule.link_extractor.extract_links(page) if link.url not in seen]
            if rule.process_links is not None:
                links = list(self._method(rule.process_links)(links))
            for link in links:
                seen.add(link.url)
                yield Follow(link.url, callback="parse_rule", data={_RULE_KEY: index, **rule.cb_kwargs})

    def _method(self, hook: str | Callable[..., Any]) -> Callable[..., Any]:
        """A rule's hook: a method by name, or a function of the class body (bound to the spider), or any callable."""
        if isinstance(hook, str):
            return getattr(self, hook)  # type: ignore[no-any-return]
        bound = getattr(self, getattr(hook, "__name__", ""), None)
        return bound if getattr(bound, "__func__", None) is hook else hook  # type: ignore[return-value]
