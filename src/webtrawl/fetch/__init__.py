"""Fetching: address/port policy (SSRF guard), DNS with overrides and caching, the raw HTTP client, and robots.txt
per origin (fetched, cached locally and in the frontier store)."""

from webtrawl.fetch.addrpolicy import AddressPolicy
from webtrawl.fetch.client import HttpClient, Response
from webtrawl.fetch.dns import Resolver
from webtrawl.fetch.robots import RobotsCache, RobotsStore

__all__ = ["AddressPolicy", "HttpClient", "Resolver", "Response", "RobotsCache", "RobotsStore"]
