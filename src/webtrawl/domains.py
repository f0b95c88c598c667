"""Registered domains (public suffix list), shared by the parse stage's scope and the frontier's politeness key.

The list ships inside ``publicsuffixlist`` (no network), so ``news.example.co.uk`` and ``shop.example.co.uk`` are one
domain while ``a.blogspot.com`` and ``b.blogspot.com`` are not (private suffixes count: that keeps a crawl of one
blog off all the others, and gives each blog its own politeness gap with ``--politeness-key domain``).
"""

from __future__ import annotations

import ipaddress

from publicsuffixlist import PublicSuffixList

_PSL: PublicSuffixList | None = None


def _psl() -> PublicSuffixList:
    """Loaded on first use: it takes ~80 ms and a host-scoped crawl never needs it."""
    global _PSL
    if _PSL is None:
        _PSL = PublicSuffixList()
    return _PSL


def registered_domain(host: str) -> str:
    """``www.example.co.uk`` -> ``example.co.uk``; IP addresses and bare suffixes stand for themselves."""
    host = host.rstrip(".")
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    domain: str | None = _psl().privatesuffix(host)
    return domain if domain else host
