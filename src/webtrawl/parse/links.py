"""From raw hrefs to the URLs a page adds: canonicalize, de-duplicate, filter; every refusal counted and listed.

Shared by HTML pages, extraction results, redirects and sitemaps (``process.py``), so every discovered URL meets
the same filters (length, scope, address policy, traps) and each refusal becomes a ``drop:<reason>`` counter and a
line of the dropped stream.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from webtrawl.errors import ScopeError, WebtrawlError
from webtrawl.formats.canonical import canonicalize
from webtrawl.messages import NewUrl, Page
from webtrawl.names import DROP_PREFIX
from webtrawl.parse.scope import Scope, host_and_port
from webtrawl.redact import redact

if TYPE_CHECKING:
    from webtrawl.parse.process import ParseContext


def canonical_or_raw(href: str, base: str, encoding: str | None = None) -> str:
    """The link as the dropped stream records it: canonical (no userinfo), else the raw href with its userinfo
    masked (``ftp://***@host/``): a stranger's credentials are not stored."""
    try:
        return canonicalize(href, base, encoding)
    except WebtrawlError:
        return redact(href)


def drop_all(
    url: str,
    base: str,
    links: list[tuple[str, bool]],
    reason: str,
    dropped: list[tuple[str, str]],
    encoding: str | None = None,
) -> None:
    """Every distinct link of a page that is not followed at all (nofollow page, depth limit)."""
    seen = {url}
    for href, _ in links:
        target = canonical_or_raw(href, base, encoding)[:_MAX_RECORDED]
        if target not in seen:
            seen.add(target)
            dropped.append((target, reason))


Links = list[tuple[str, bool]]  # (raw href, rel=nofollow) of a page's links


def follow_page_links(
    page: Page,
    ctx: ParseContext,
    nofollow: bool,
    base: str,
    links: Links,
    counters: dict[str, int],
    dropped: list[tuple[str, str]],
    priority_of: Callable[[str], int] | None = None,
    route_of: Callable[[str], str] | None = None,
    encoding: str | None = None,
) -> list[NewUrl]:
    """:func:`follow_links`, or on a page whose robots say ``nofollow`` (when honoured) none: each listed as such."""
    if not (nofollow and ctx.politeness.honor_nofollow):
        return follow_links(page, ctx, base, links, counters, dropped, priority_of, route_of, encoding)
    if links:
        counters[DROP_PREFIX + "nofollow"] = len(links)
        drop_all(page.lease.url, base, links, "nofollow", dropped, encoding)
    return []


_MAX_RECORDED = 2048  # a dropped href that is not a URL is recorded cut to this length
_MAX_ORIGINS = 10_000  # bound of ParseContext.origin_verdicts (cleared when full; a verdict costs microseconds)
_UNCHECKED = "\x00unchecked"  # an origin without a verdict in ParseContext.origin_verdicts (compared by identity)


def drop(counters: dict[str, int], reason: str, dropped: list[tuple[str, str]], url: str) -> None:
    key = DROP_PREFIX + reason
    counters[key] = counters.get(key, 0) + 1
    dropped.append((redact(url[:_MAX_RECORDED]), reason))  # a raw href's userinfo masked (canonical ones have none)


def follow_links(
    page: Page,
    ctx: ParseContext,
    base: str,
    links: list[tuple[str, bool]],
    counters: dict[str, int],
    dropped: list[tuple[str, str]],
    priority_of: Callable[[str], int] | None = None,
    route_of: Callable[[str], str] | None = None,
    encoding: str | None = None,
) -> list[NewUrl]:
    """Canonical, de-duplicated, filtered outlinks; each refusal counted as ``drop:<reason>`` and listed.

    ``encoding``: the Python codec of the page the links are in; their queries are encoded in it (WHATWG URL).

    ``priority_of``: raw href -> the explicit priority level a rule or callback gave it (-1: none); a link found
    several times keeps its best one. ``route_of``: raw href -> the route a spider gave it ("": none); a link found
    several times keeps the first route it was given (a page's own link, unrouted, takes a later Follow's route).
    """
    limits = ctx.limits
    depth = page.lease.depth + 1
    if limits.max_depth > 0 and depth > limits.max_depth:
        if links:
            counters[DROP_PREFIX + "depth"] = len({href for href, _ in links})
            drop_all(page.lease.url, base, links, "depth", dropped, encoding)
        return []
    honor_nofollow = ctx.politeness.honor_nofollow
    max_len = limits.max_url_length
    raw_cap = 4 * max_len  # canonicalizing can shorten a URL (dot segments, %XX), never by 4x in practice
    scope = ctx.scope
    # a spider's links are those its callbacks yield: its own, followed as Scrapy follows them (no trap guard)
    traps = None if ctx.spider else ctx.traps
    checked = ctx.origin_verdicts
    seen = {page.lease.url}
    # Raw href -> the reason it was dropped unparsed, or None once its canonical URL is in ``seen``: pages repeat
    # their navigation links, and a repeat then costs a dict lookup instead of a canonicalization.
    done: dict[str, str | None] = {}
    out: list[NewUrl] = []
    for href, rel_nofollow in links:
        if rel_nofollow and honor_nofollow:
            drop(counters, "nofollow", dropped, canonical_or_raw(href, base, encoding))
            continue
        if href in done:
            unparsed = done[href]
            if unparsed is not None:
                drop(counters, unparsed, dropped, href)
            continue
        if len(href) > raw_cap:
            done[href] = "url-too-long"
            drop(counters, "url-too-long", dropped, href)
            continue
        try:
            url = canonicalize(href, base, encoding)
        except WebtrawlError as exc:
            done[href] = exc.reason
            drop(counters, exc.reason, dropped, href)
            continue
        done[href] = None
        priority = priority_of(href) if priority_of is not None else -1
        route = route_of(href) if route_of is not None else ""
        if url in seen:
            if priority >= 0 or route:
                _rank(out, url, priority, route)
            continue
        seen.add(url)
        reason = refusal(url, max_len, scope, ctx.url_allowed, checked)
        if reason is None and traps is not None:
            reason = traps.check(url)
        if reason is None:
            out.append(NewUrl(url, depth, 0, priority, route))
        else:
            drop(counters, reason, dropped, url)
    return out


def _rank(out: list[NewUrl], url: str, priority: int, route: str) -> None:
    """A link found again with an explicit priority or a route: the better of its levels, its first route (a linear
    search, only for ranked or routed repeats, which are few)."""
    for i, new in enumerate(out):
        if new.url == url:
            better = priority >= 0 and (new.priority < 0 or priority < new.priority)
            if better or (route and not new.route):
                level = priority if better else new.priority
                out[i] = NewUrl(url, new.depth, new.hops, level, new.route or route)
            return


def refusal(
    url: str,
    max_len: int,
    scope: Scope,
    url_allowed: Callable[[str, int], str | None] | None,
    checked: dict[str, str | None],
) -> str | None:
    """Why a canonical URL is not followed (length, scope, address policy), or None.

    ``checked`` caches the address verdict per scheme + authority: pages link to few hosts many times.
    """
    if len(url) > max_len:
        return "url-too-long"
    if not scope.allows(url):
        return ScopeError.reason
    if url_allowed is None:
        return None
    origin = url[: url.find("/", 8)]
    reason = checked.get(origin, _UNCHECKED)  # not try/except: a miss (a new origin) is ~8 links a page
    if reason is _UNCHECKED:
        if len(checked) >= _MAX_ORIGINS:
            checked.clear()
        reason = checked[origin] = url_allowed(*host_and_port(url))
    return reason
