"""Registered domains (public suffix list), shared by the parse stage's scope and the frontier's politeness key.

The list ships inside ``publicsuffixlist`` (no network), so ``news.example.co.uk`` and ``shop.example.co.uk`` are one
domain while ``a.blogspot.com`` and ``b.blogspot.com`` are not (private suffixes count: that keeps a crawl of one
blog off all the others, and gives each blog its own politeness gap with ``--politeness-key domain``).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable

from publicsuffixlist import PublicSuffixList

_PSL: PublicSuffixList | None = None


def _psl() -> PublicSuffixList:
    """Loaded on first use: it takes ~80 ms and a host-scoped crawl never needs it."""
    global _PSL
    if _PSL is None:
        _PSL = PublicSuffixList()
    return _PSL


def domain_names(domains: Iterable[str]) -> tuple[str, ...]:
    """A spider's ``allowed_domains`` as :func:`in_domains` matches them: lower-case, no leading or trailing dot."""
    return tuple(d.lower().strip(".") for d in domains)


def in_domains(host: str, domains: tuple[str, ...]) -> bool:
    """Whether ``host`` is one of ``domains`` (from :func:`domain_names`) or a subdomain of one: Scrapy's offsite
    rule (``example.com`` allows ``www.example.com``, not ``notexample.com``)."""
    host = host.rstrip(".")
    return any(host == d or host.endswith("." + d) for d in domains)


@functools.lru_cache(maxsize=10_000)  # asked per cookie a server sets for a domain
def is_public_suffix(name: str) -> bool:
    """``com``, ``co.uk``, ``github.io`` (private suffixes count, as browsers count them): names under which anyone
    may hold a site."""
    name = name.strip(".").lower()
    return bool(name) and bool(_psl().is_public(name))


@functools.lru_cache(maxsize=100_000)  # asked per URL (a domain's politeness key) or per cookie: hosts repeat
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
