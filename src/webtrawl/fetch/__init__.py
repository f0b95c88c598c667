"""Fetching: address/port policy (SSRF guard), DNS with overrides and caching, and the raw HTTP client."""

from webtrawl.fetch.addrpolicy import AddressPolicy
from webtrawl.fetch.client import HttpClient, Response
from webtrawl.fetch.dns import Resolver

__all__ = ["AddressPolicy", "HttpClient", "Resolver", "Response"]
