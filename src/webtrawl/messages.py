"""Value objects that travel between the stages: frontier -> fetcher -> parser -> frontier.

They are msgspec Structs so that the page handed from a fetcher to a parser process is encoded once, as msgpack,
without a JSON or pickle detour (the seed crawler lost a good part of its CPU there).
"""

from __future__ import annotations

import msgspec


class Lease(msgspec.Struct, frozen=True):
    """One URL of one host, handed by the frontier to one fetcher until ``fetched``/``complete`` or expiry."""

    token: str  # unique lease id; its prefix up to the last '.' is the owner (node.process)
    shard: int
    host: str  # politeness key (lower-case host name)
    url: str  # full canonical URL
    depth: int = 0
    hops: int = 0  # redirect hops that led here
    retries: int = 0  # transient failures so far
    render: bool = False  # the frontier remembers that this host's pages are built by scripts (--render auto)
    route: str = ""  # a spider's callback and data for this URL (webtrawl.extract.routing); "": none (parse, {})


class NewUrl(msgspec.Struct, frozen=True):
    """A canonical URL to add to the frontier (already through scope and trap filters)."""

    url: str
    depth: int = 0
    hops: int = 0
    priority: int = -1  # explicit priority level 0 (first) .. PRIORITY_LEVELS - 1 (names.py); -1: by depth
    route: str = ""  # a spider's callback and data (webtrawl.extract.routing), queued with the URL; "": none


class RecrawlHint(msgspec.Struct, frozen=True):
    """A sitemap's hints for one of its URLs in a crawl with --recrawl-after (parse/recrawl.py, scripts/hint.lua)."""

    url: str
    interval_ms: int = 0  # the first recrawl interval its changefreq asks for (already bounded); 0: none
    modified: str = ""  # its lastmod as ISO UTC, the format of a record's fetch_time; "": none


class Exchange(msgspec.Struct):
    """One request a browser made while rendering a page (a script, a stylesheet, an XHR), or one answer of a
    robots.txt fetch, as received: stored in the WARC beside the page's own request/response pair. ``body`` is still
    content-encoded, like ``Page.body``."""

    url: str
    status: int
    reason: str = ""
    http_version: str = "1.1"
    headers: list[tuple[str, str]] = msgspec.field(default_factory=list)
    body: bytes = b""
    truncated: bool = False
    request_headers: list[tuple[str, str]] = msgspec.field(default_factory=list)
    ip: str = ""
    fetch_time: float = 0.0


class Page(msgspec.Struct):
    """What a fetcher hands a parser: the lease plus everything needed to store and parse the answer.

    ``error`` is empty when a complete HTTP response was received (any status); otherwise it is the reason of the
    :mod:`webtrawl.errors` class that stopped the fetch (``timeout``, ``robots``, ``ip-policy``...), and ``body`` may
    be empty or a truncated prefix. ``body`` is the payload as received: still content-encoded, chunking removed.
    """

    lease: Lease
    status: int = 0
    reason: str = ""
    http_version: str = "1.1"
    headers: list[tuple[str, str]] = msgspec.field(default_factory=list)
    body: bytes = b""
    truncated: bool = False
    error: str = ""
    error_detail: str = ""
    request_headers: list[tuple[str, str]] = msgspec.field(default_factory=list)
    ip: str = ""
    fetch_time: float = 0.0  # epoch seconds at request start
    elapsed_ms: float = 0.0
    recrawl: str = ""  # --recrawl-after: the URL's state in the recrawl set when it was leased (validators, digest)
    # Set when a browser rendered the page: why (``always``, ``include``, ``host``, ``shell: ...``), the DOM after
    # its scripts ran (UTF-8 HTML, what the parser reads instead of ``body``), the other requests it made, the
    # requests it was refused (reason -> count) and the URLs its scripts sent it to (``location.href = ...``: the
    # render stays on the page, the parser takes them as links). ``body`` stays the navigation response as received.
    render_reason: str = ""
    dom: bytes | None = None
    exchanges: list[Exchange] = msgspec.field(default_factory=list)
    render_blocked: dict[str, int] = msgspec.field(default_factory=dict)
    navigations: list[str] = msgspec.field(default_factory=list)
    # The robots.txt answers (each redirect hop) the fetcher downloaded since it handed on its last page: archived
    # with this page, whatever becomes of the page itself (fetch/robots.py keeps them until then).
    robots: list[Exchange] = msgspec.field(default_factory=list)
    # When the frontier may take the URL back from the parsers (the release + --process-ttl, counted from before the
    # release was sent), in time.monotonic() seconds: system-wide, so the fetchers and parsers of a node share it.
    # A parser drops a page it could not store in time (parse/fence.py); 0: no deadline (not from a fetcher).
    keep_until: float = 0.0
    # The fetch failed in a way worth trying again and its retries are used up: the frontier keeps the URL for
    # ``trawl requeue`` (frontier/scripts/complete.lua)
    retried_out: bool = False
    # Not requested: one of the queued URLs of a host found down (fetch/giveup.py); its completion counts given-up
    given_up: bool = False

    @property
    def rendered(self) -> bool:
        return self.dom is not None


class Completion(msgspec.Struct, frozen=True):
    """The end of one leased URL: counters to bump on its shard, in the same atomic step that drops the lease."""

    token: str
    shard: int
    counters: dict[str, int] = msgspec.field(default_factory=dict)
    url: str = ""  # with recrawl: the URL, its state in the recrawl set and when it is due (ms, epoch)
    recrawl: str = ""
    due_ms: int = 0
    failed: str = ""  # the reason of a failure whose retries are used up: kept for ``trawl requeue``


PAGE_ENCODER = msgspec.msgpack.Encoder()
PAGE_DECODER = msgspec.msgpack.Decoder(Page)
