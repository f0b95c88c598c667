"""Fetching: address/port policy (SSRF guard), DNS with overrides and caching, the raw HTTP client, robots.txt per
origin (fetched, cached locally and in the frontier store), and the Fetcher seam (built-ins by role, users' classes
by import path). Exports load on first use (:mod:`webtrawl.lazy`)."""

from typing import TYPE_CHECKING

from webtrawl.lazy import lazy_exports

if TYPE_CHECKING:
    from webtrawl.fetch.addrpolicy import AddressPolicy
    from webtrawl.fetch.base import Fetcher, FetcherContext, FetchRequest
    from webtrawl.fetch.client import HttpClient
    from webtrawl.fetch.dns import Resolver
    from webtrawl.fetch.response import Response
    from webtrawl.fetch.robots import RobotsCache, RobotsStore

__all__ = [
    "AddressPolicy",
    "FetchRequest",
    "Fetcher",
    "FetcherContext",
    "HttpClient",
    "Resolver",
    "Response",
    "RobotsCache",
    "RobotsStore",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "AddressPolicy": "webtrawl.fetch.addrpolicy",
        **dict.fromkeys(["FetchRequest", "Fetcher", "FetcherContext"], "webtrawl.fetch.base"),
        "HttpClient": "webtrawl.fetch.client",
        "Response": "webtrawl.fetch.response",
        "Resolver": "webtrawl.fetch.dns",
        "RobotsCache": "webtrawl.fetch.robots",
        "RobotsStore": "webtrawl.fetch.robots",
    },
)
