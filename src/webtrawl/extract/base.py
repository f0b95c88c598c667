"""The extraction stage's protocol: an :class:`Extractor` turns one page into items (and maybe links to follow).

Extractors are built inside the parser process from what the config names (``--extract rules.toml``,
``--extract package.module:function`` or ``--extract package.module:Class``, a class implementing
:class:`Extractor`, called with no arguments) and run on the page the parser already decoded and parsed, so the HTML
is parsed by lexbor once for links and CSS rules; XPath and the callback's selectors parse it a second time with
lxml (parsel), only when used.

Two optional capabilities let the rest of the crawler ask an extractor, whatever its class, for more:
:class:`RequestHints` (the fetcher: headers per request, and whether a page yields nothing, for ``--render auto``)
and :class:`RecrawlHints` (the parser: a recrawl interval per page). The built-in rules implement both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

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
    links); by default its level is its depth (capped at 3).
    """

    __slots__ = ("priority", "url")

    def __init__(self, url: str | None, priority: int | None = None) -> None:
        self.url = url
        self.priority = None if priority is None else check_priority(priority)

    def __repr__(self) -> str:
        if self.priority is None:
            return f"Follow({self.url!r})"
        return f"Follow({self.url!r}, priority={self.priority})"


@dataclass(slots=True)
class ExtractResult:
    items: list[dict[str, Any]] = field(default_factory=list)
    # None: follow the page's own links as usual; a list: follow only these (raw hrefs, resolved by the parser)
    links: list[str] | None = None
    extra_links: list[str] = field(default_factory=list)  # followed in addition to the page's links
    priorities: dict[str, int] = field(default_factory=dict)  # raw href -> the priority level it was given
    link_priority: int = -1  # a rule's priority: the level of every link the page follows (-1: by depth)

    def priority_of(self, href: str) -> int:
        """The explicit priority level of a followed link, -1 if none."""
        return self.priorities.get(href, self.link_priority) if self.priorities else self.link_priority


class Extractor(Protocol):
    """Items from one page. Raises on bad user code; the caller records that on the page as an extract-error."""

    name: str  # for log lines

    def extract(self, doc: Document) -> ExtractResult: ...


@runtime_checkable
class RequestHints(Protocol):
    """Optional: what the fetcher asks an extractor (``fetch/rulehints.py``). The fetcher builds its own copy of the
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
