"""Which discovered URLs the crawl follows: the seed's host, its registered domain, or any; plus user regexes.

The registered domain comes from the public suffix list (:mod:`webtrawl.domains`), so ``news.example.co.uk`` and
``shop.example.co.uk`` are one domain while ``a.blogspot.com`` and ``b.blogspot.com`` are not (private suffixes
count: that keeps a crawl of one blog off all the others).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from webtrawl.domains import domain_names, in_domains, registered_domain
from webtrawl.errors import ConfigError, WebtrawlError
from webtrawl.formats.canonical import canonicalize


def host_and_port(url: str) -> tuple[str, int]:
    """Host (lower-case, no IPv6 brackets) and port of a canonical http(s) URL."""
    scheme, _, rest = url.partition("://")
    netloc = rest.split("/", 1)[0].rpartition("@")[2]
    if netloc.startswith("["):
        end = netloc.find("]")
        host, port = netloc[1:end], netloc[end + 2 :]
    else:
        host, _, port = netloc.partition(":")
    return host, int(port) if port else (443 if scheme == "https" else 80)


def _searcher(patterns: list[re.Pattern[str]]) -> Callable[[str], object] | None:
    """Whether any of ``patterns`` is found in a URL (truthy), or None for no patterns at all.

    Runs for every link of every page: one pattern (the usual case) is searched directly, without the
    generator that ``any()`` over a list costs. Patterns are not joined into one alternation: inline flags and
    group numbers would change meaning.
    """
    if not patterns:
        return None
    if len(patterns) == 1:
        return patterns[0].search
    return lambda url: any(p.search(url) for p in patterns)


class Scope:
    """``allows(url)`` for canonical URLs. Seeds that do not canonicalize are skipped (refused earlier)."""

    def __init__(
        self,
        mode: str,
        seeds: list[str],
        include: Iterable[str],
        exclude: Iterable[str],
        allowed_domains: Iterable[str] = (),
    ) -> None:
        if mode not in ("any", "host", "domain"):
            raise ConfigError(f"scope must be any, host or domain, not {mode!r}")
        self.mode = mode
        try:
            self._include = _searcher([re.compile(p) for p in include])
            self._exclude = _searcher([re.compile(p) for p in exclude])
        except re.error as exc:
            raise ConfigError(f"bad scope regex: {exc}") from None
        hosts: set[str] = set()
        for seed in seeds:
            try:
                hosts.add(host_and_port(canonicalize(seed))[0].rstrip("."))
            except WebtrawlError:
                continue
        self._hosts = frozenset(hosts)
        self._domains = frozenset(registered_domain(h) for h in hosts) if mode == "domain" else frozenset()
        self._domain_cache: dict[str, bool] = {}
        # a spider's allowed_domains (Scrapy's offsite rule): those hosts and their subdomains, on top of the rest
        self._allowed = domain_names(allowed_domains)
        self._allowed_cache: dict[str, bool] = {}
        self._trivial = mode == "any" and not include and not exclude and not self._allowed

    def allows(self, url: str) -> bool:
        if self._trivial:
            return True
        if self.mode != "any" and not self._host_allowed(host_and_port(url)[0].rstrip(".")):
            return False
        if self._allowed and not self._in_allowed_domains(host_and_port(url)[0].rstrip(".")):
            return False
        if self._include is not None and not self._include(url):
            return False
        return self._exclude is None or not self._exclude(url)

    def _host_allowed(self, host: str) -> bool:
        if host in self._hosts:
            return True
        if self.mode == "host":
            return False
        known = self._domain_cache.get(host)
        if known is None:
            if len(self._domain_cache) > 100_000:
                self._domain_cache.clear()
            known = self._domain_cache[host] = registered_domain(host) in self._domains
        return known

    def _in_allowed_domains(self, host: str) -> bool:
        known = self._allowed_cache.get(host)
        if known is None:
            if len(self._allowed_cache) > 100_000:
                self._allowed_cache.clear()
            known = self._allowed_cache[host] = in_domains(host, self._allowed)
        return known


__all__ = ["Scope", "host_and_port", "registered_domain"]
