"""The fetcher seam: how a leased URL becomes a :class:`Response`, whatever does the fetching.

Two implementations: :class:`HttpFetcher` (one GET over the process's aiohttp client) and the browser of
:mod:`webtrawl.fetch.render` (Chromium through Playwright, every request it makes fetched by that same client). The
fetcher process builds both from the config (the browser only if rendering is on, and Playwright is imported only
then) and picks one per URL (:mod:`webtrawl.fetch.route`); leases, politeness and the parser hand-off stay in the
worker, so a new way of fetching is one class here and one line in ``build_fetchers``.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from webtrawl.fetch.client import HttpClient
from webtrawl.fetch.response import Response
from webtrawl.politeness import RobotsRules


class FetcherBusy(Exception):
    """The fetcher cannot take this URL in time (every renderer is busy): give the URL back, it is not a failure."""


class FetchRequest(msgspec.Struct, frozen=True):
    """What the worker asks of a fetcher for one leased URL."""

    url: str
    reason: str = ""  # why this fetcher was chosen (a render's reason ends up in the page record)
    prior: Response | None = None  # an HTTP answer already received for ``url`` (--render auto): reuse it
    headers: dict[str, str] = msgspec.field(default_factory=dict)  # more request headers (a recrawl's validators)


class Fetcher(Protocol):
    """Fetches one URL; raises a :mod:`webtrawl.errors` ``TransportError`` or ``PolicyError`` on failure.

    ``rules`` are the page origin's robots.txt rules (already checked for ``request.url``): a fetcher that makes
    more requests (a browser loading scripts) checks each of them too."""

    name: str

    async def fetch(self, request: FetchRequest, rules: RobotsRules) -> Response: ...

    async def close(self) -> None: ...


class HttpFetcher:
    """The plain fetch: one GET, no redirects followed, exactly as the server sent it."""

    name = "http"

    def __init__(self, client: HttpClient) -> None:
        self.client = client

    async def fetch(self, request: FetchRequest, rules: RobotsRules) -> Response:
        if request.prior is not None:
            return request.prior
        return await self.client.fetch(request.url, headers=request.headers or None)

    async def close(self) -> None:
        """The client belongs to the worker (robots.txt uses it too)."""
