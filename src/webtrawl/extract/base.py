"""The extraction stage's protocol: an :class:`Extractor` turns one page into items (and maybe links to follow).

Extractors are built inside the parser process from what the config names (``--extract rules.toml``,
``--extract package.module:function`` or ``--extract package.module:Class``, a class implementing
:class:`Extractor`, called with no arguments) and run on the page the parser already decoded and parsed, so the HTML
is parsed by lexbor once for links and CSS rules; XPath and the callback's selectors parse it a second time with
lxml (parsel), only when used.

Optional capabilities let the rest of the crawler ask an extractor, whatever its class, for more:
:class:`RequestHints` (the fetcher: headers per request, and whether a page yields nothing, for ``--render auto``),
:class:`RecrawlHints` (the parser: a recrawl interval per page) and :class:`StartRequests` (the supervisor: seeds
with their routes, a spider's). The built-in rules implement the first two.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from webtrawl.errors import UserCodeError
from webtrawl.extract.document import Document
from webtrawl.names import PRIORITY_LEVELS


def check_priority(value: Any) -> int:
    """A user's priority (rule or callback) as a frontier level: 0 (first, with the seeds) .. PRIORITY_LEVELS - 1.

    Raises ValueError with a message for the user otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < PRIORITY_LEVELS:
        raise ValueError(f"priority must be a whole number 0 (first) .. {PRIORITY_LEVELS - 1}, not {value!r}")
    return value


class Follow:
    """A link a callback wants followed (a plain string works too); relative URLs are resolved against the page.

    ``priority`` ranks it in its host's queue: 0 (first, with the seeds and sitemap URLs) .. 3 (with the deepest
    links); by default its level is its depth (capped at 3). ``callback`` (a spider's method, or its name) handles
    the page it leads to (default ``parse``); ``data`` (a JSON-able dict, at most 16 KiB as JSON) is that page's
    ``page.data``. Both travel with the URL through the frontier (:mod:`webtrawl.extract.routing`). Scrapy's
    ``cb_kwargs`` is data too (merged over ``data``): a callback's parameters after ``page`` are filled from it.
    """

    __slots__ = ("callback", "data", "priority", "url")

    def __init__(
        self,
        url: str | None,
        priority: int | None = None,
        *,
        callback: str | Callable[..., Any] | None = None,
        data: dict[str, Any] | None = None,
        cb_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self.url = url
        self.priority = None if priority is None else _priority(priority)
        self.callback = callback if callback is None or isinstance(callback, str) else _method_name(callback)
        self.data = data if not cb_kwargs else {**(data or {}), **cb_kwargs}

    def __repr__(self) -> str:
        args = [repr(self.url)]
        if self.priority is not None:
            args.append(f"priority={self.priority}")
        if self.callback is not None:
            args.append(f"callback={self.callback!r}")
        if self.data is not None:
            args.append(f"data={self.data!r}")
        return f"Follow({', '.join(args)})"


class Link(NamedTuple):
    """A link a :class:`~webtrawl.extract.crawlspider.LinkExtractor` found: its absolute URL, its text, and whether
    it says ``rel=nofollow``; ``page.follow(link)`` follows it, as Scrapy's ``response.follow`` does."""

    url: str
    text: str = ""
    nofollow: bool = False


def _priority(value: Any) -> int:
    if callable(value) or isinstance(value, str):  # Scrapy's Request(url, self.parse_item), ported
        raise ValueError(
            f"Follow(url, {value!r}): the second argument is the priority (0..{PRIORITY_LEVELS - 1}); pass the "
            "callback as a keyword: Follow(url, callback=...)"
        )
    return check_priority(value)


def _method_name(callback: Callable[..., Any]) -> str:
    """``self.parse_product`` -> ``"parse_product"``: only the name travels (the page is handled in any parser)."""
    name = getattr(callback, "__name__", None)
    if not isinstance(name, str) or not callable(callback):
        raise ValueError(f"callback must be a spider method or its name, not {callback!r}")
    return name


@dataclass(slots=True)
class ExtractResult:
    items: list[dict[str, Any]] = field(default_factory=list)
    # None: follow the page's own links as usual; a list: follow only these (raw hrefs, resolved by the parser)
    links: list[str] | None = None
    extra_links: list[str] = field(default_factory=list)  # followed in addition to the page's links
    priorities: dict[str, int] = field(default_factory=dict)  # raw href -> the priority level it was given
    link_priority: int = -1  # a rule's priority: the level of every link the page follows (-1: by depth)
    routes: dict[str, str] = field(default_factory=dict)  # raw href -> its route (a spider's callback and data)
    link_route: str = ""  # a rule's data: the route of every link the page follows ("": none)
    # the first value a callback yielded that was refused (left out, the others kept): the page's extract-error
    refused: UserCodeError | None = None
    # the items are already as their JSON lines hold them (extract/itemjson.py): a callback's, converted when yielded
    items_as_stored: bool = False

    def priority_of(self, href: str) -> int:
        """The explicit priority level of a followed link, -1 if none."""
        return self.priorities.get(href, self.link_priority) if self.priorities else self.link_priority

    def route_of(self, href: str) -> str:
        """The route a followed link carries, "" if none."""
        return self.routes.get(href, self.link_route) if self.routes else self.link_route


class Extractor(Protocol):
    """Items from one page. Raises on bad user code; the caller records that on the page as an extract-error."""

    name: str  # for log lines

    def extract(self, doc: Document) -> ExtractResult: ...


@runtime_checkable
class Closing(Protocol):
    """Optional: told once, in each parser process, that the process ends (a spider's Scrapy ``closed(reason)``):
    ``finished`` when the crawl has nothing left, else ``shutdown`` (a stop, ``--max-pages``, a drain)."""

    def close(self, reason: str) -> None: ...


@runtime_checkable
class RequestHints(Protocol):
    """Optional: what the fetcher asks an extractor (``extract/hints.py``). The fetcher builds its own copy of the
    extractor and calls these there, so they must have no effects (callbacks never implement them)."""

    sends_headers: bool  # whether headers_for can give anything (if not, it is not asked per request)

    def headers_for(self, url: str) -> dict[str, str]:
        """More request headers for ``url`` (HTTP and a render's), empty if none."""
        ...

    def wants(self, url: str) -> bool:
        """Whether some page at ``url`` could be for this extractor (a cheap test before decoding anything)."""
        ...

    def finds_no_items(self, doc: Document) -> bool:
        """``--render auto``: True when ``doc`` is for this extractor and it finds no item in it (then the page is
        rendered); False when it finds some or the page is not for it. May raise (then no render)."""
        ...


@runtime_checkable
class RecrawlHints(Protocol):
    """Optional: a recrawl interval per page (with ``--recrawl-after``), e.g. a rule's ``recrawl_after``."""

    sets_recrawl: bool  # whether some page gets its own interval (they need --recrawl-after)

    def recrawl_after(self, url: str, content_type: str) -> float:
        """Seconds until ``url`` is due again, 0 for the crawl's ``--recrawl-after``."""
        ...


class StartRequest(NamedTuple):
    """A seed an extractor gives the crawl (a spider's ``start_requests()``): its URL as given, its route (a
    callback and data, :mod:`webtrawl.extract.routing`) and its priority level (-1: none)."""

    url: str
    route: str
    priority: int


@runtime_checkable
class StartRequests(Protocol):
    """Optional: the seeds an extractor brings (a spider's), asked once per crawl by a supervisor, never per page."""

    def start_requests(self) -> list[StartRequest]:
        """The seeds; :class:`~webtrawl.errors.InputError` (one line for the user) if the user's code fails."""
        ...
