"""The browser fetch path: JavaScript pages rendered in the system's Chromium through Playwright.

``shell`` (the ``--render auto`` heuristic) needs no browser; everything else imports Playwright, an optional extra
(``pip install 'webtrawl[render]'``), so only a fetcher process that renders loads it (:func:`open_browser_fetcher`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from webtrawl.config import FetchOptions, Limits, RenderOptions

if TYPE_CHECKING:
    from webtrawl.fetch.client import HttpClient
    from webtrawl.fetch.render.fetcher import BrowserFetcher
    from webtrawl.fetch.robots import RobotsCache


def open_browser_fetcher(
    opts: RenderOptions, fetch: FetchOptions, limits: Limits, lease_ttl: float, client: HttpClient, robots: RobotsCache
) -> BrowserFetcher:
    """The browser fetcher of this process (Chromium starts on its first render)."""
    from webtrawl.fetch.render.fetcher import BrowserFetcher

    return BrowserFetcher(opts, fetch, limits, lease_ttl, client, robots)
