"""The browser fetch path: JavaScript pages rendered in the system's Chromium through Playwright.

``shell`` (the ``--render auto`` heuristic) needs no browser; everything else imports Playwright, an optional extra
(``pip install 'webtrawl[render]'``), so only a fetcher process that renders loads it (:func:`open_browser_fetcher`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from webtrawl.fetch.base import FetcherContext
    from webtrawl.fetch.render.fetcher import BrowserFetcher


def open_browser_fetcher(ctx: FetcherContext) -> BrowserFetcher:
    """The browser fetcher of this process (Chromium starts on its first render): the built-in ``browser``."""
    from webtrawl.fetch.render.fetcher import BrowserFetcher

    return BrowserFetcher(ctx.rendering, ctx.fetch, ctx.limits, ctx.lease_ttl, ctx.client, ctx.robots)
