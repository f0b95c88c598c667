"""What a fetcher adds to the frontier itself: the ``Sitemap:`` URLs of each robots.txt it downloads, and the
address gates of ``--politeness-key ip``.

Both live here rather than in ``worker.py`` because they are policy, not plumbing: which sitemaps a robots.txt may
name (sitemaps.org's cross-submission rule: its own host only), and how requests to one server address are spaced
when many host names share it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from webtrawl.addrpolicy import AddressPolicy
from webtrawl.errors import WebtrawlError
from webtrawl.fetch.dns import Resolver
from webtrawl.formats.canonical import canonicalize
from webtrawl.formats.route import SITEMAP_ROUTE
from webtrawl.frontier import AsyncRedisFrontier
from webtrawl.messages import Lease, NewUrl

MAX_ROBOTS_SITEMAPS = 1000  # Sitemap: lines of one robots.txt that are followed


def robots_sitemaps(origin: str, urls: list[str], policy: AddressPolicy) -> list[NewUrl]:
    """A robots.txt's ``Sitemap:`` URLs on its own host, at depth 0 like seeds, marked as sitemaps (a text one is
    read only so).

    The host already passed the scope and the address policy (its URL was leased); only the port is checked again.
    """
    host = urlsplit(origin).hostname
    new: list[NewUrl] = []
    for raw in urls[:MAX_ROBOTS_SITEMAPS]:
        try:
            url = canonicalize(raw, origin + "/")
        except WebtrawlError:
            continue
        parts = urlsplit(url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            continue
        if host and parts.hostname == host and policy.url_allowed(host, port) is None:
            new.append(NewUrl(url, 0, route=SITEMAP_ROUTE))
    return new


class AddressGate:
    """``--politeness-key ip``: one request at a time per server address, with the gap after it, across nodes.

    Before each request the fetcher resolves the lease's host (the resolver caches, and the request then connects to
    the same first address) and takes that address's gate in the frontier (``gate.lua``); the release frees it and
    starts its gap. A name that does not resolve or is refused needs no gate: its request fails before any server
    sees it. A holder that dies leaves a lock that lapses after ``hold_ms``.
    """

    def __init__(self, frontier: AsyncRedisFrontier, resolver: Resolver, hold_ms: int) -> None:
        self._frontier = frontier
        self._resolver = resolver
        self._hold_ms = hold_ms
        self._held: dict[str, str] = {}  # lease token -> the address it holds

    async def take(self, lease: Lease) -> int:
        """0 if the lease may send its request now, else ms until its address may be free."""
        host = urlsplit(lease.url).hostname or lease.host
        try:
            addresses = await self._resolver.lookup(host)
        except WebtrawlError:
            return 0
        address = addresses[0]
        wait = await self._frontier.take_address(address, lease.token, self._hold_ms)
        if wait == 0:
            self._held[lease.token] = address
        return wait

    async def free(self, token: str, gap_ms: int) -> None:
        address = self._held.pop(token, None)
        if address is not None:
            await self._frontier.free_address(address, token, gap_ms)
