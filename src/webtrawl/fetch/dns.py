"""Name resolution for the fetcher: overrides, async DNS with a bounded TTL cache, and the address policy.

Plugged into aiohttp as its resolver so that the address a socket connects to is exactly the one the policy
approved (no second lookup between the check and the connect that a DNS-rebinding server could answer
differently). A crawl asks for the same few hosts over and over, so answers are cached for their TTL (clamped)
and "no such name" answers for a short while; concurrent lookups of one name share a single query.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import aiodns
from aiohttp.abc import AbstractResolver, ResolveResult

from webtrawl.errors import ConfigError, DnsError, DnsTimeout, IpPolicyError
from webtrawl.fetch.addrpolicy import AddressPolicy, parse_ip_literal

# c-ares answers that mean "this name has no address": safe to remember for a while.
_NEGATIVE_CODES = frozenset(
    {
        aiodns.error.ARES_ENOTFOUND,
        aiodns.error.ARES_ENODATA,
        aiodns.error.ARES_ENONAME,
        aiodns.error.ARES_EBADNAME,
    }
)
_FLAGS = socket.AI_NUMERICHOST | socket.AI_NUMERICSERV


@dataclass(slots=True)
class _Entry:
    expires: float
    addresses: tuple[str, ...]  # empty: negative entry
    error: str = ""


class Overrides:
    """``HOST=IP[,IP]`` pins, ``*.suffix=IP`` for every name under a suffix and ``*=IP`` for all names."""

    def __init__(self, items: Iterable[str]) -> None:
        self._exact: dict[str, tuple[str, ...]] = {}
        self._suffix: dict[str, tuple[str, ...]] = {}
        self._default: tuple[str, ...] | None = None
        for item in items:
            host, sep, ips = item.partition("=")
            host = _norm(host)
            if not sep or not host:
                raise ConfigError(f"--resolve wants HOST=IP, not {item!r}")
            addresses = tuple(_address(ip, item) for ip in ips.split(",") if ip.strip())
            if not addresses:
                raise ConfigError(f"--resolve wants HOST=IP, not {item!r}")
            if host == "*":
                self._default = addresses
            elif host.startswith("*."):
                self._suffix[host[2:]] = addresses
            else:
                self._exact[host] = addresses

    def get(self, host: str) -> tuple[str, ...] | None:
        """Pinned addresses of ``host`` (normalised); the most specific rule wins: exact, suffix, ``*``."""
        found = self._exact.get(host)
        if found is not None:
            return found
        if self._suffix:
            labels = host.split(".")
            for i in range(1, len(labels)):
                found = self._suffix.get(".".join(labels[i:]))
                if found is not None:
                    return found
        return self._default


class Resolver(AbstractResolver):
    """aiohttp resolver that only ever returns addresses the :class:`AddressPolicy` allows."""

    def __init__(
        self,
        overrides: Iterable[str],
        policy: AddressPolicy,
        *,
        nameservers: Sequence[str] | None = None,
        cache_size: int = 10_000,
        min_ttl: float = 60.0,
        max_ttl: float = 3600.0,
        negative_ttl: float = 60.0,
        timeout: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.overrides = Overrides(overrides)
        self.policy = policy
        self._nameservers = list(nameservers or [])
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._cache_size = cache_size
        self._min_ttl, self._max_ttl, self._negative_ttl = min_ttl, max_ttl, negative_ttl
        self._timeout = timeout
        self._clock = clock
        self._dns: aiodns.DNSResolver | None = None
        self._inflight: dict[str, asyncio.Task[_Entry]] = {}
        self.queries = 0  # DNS queries actually sent (cache misses): for stats and tests

    async def lookup(self, host: str) -> list[str]:
        """Allowed addresses of ``host``. Raises :class:`DnsError` or :class:`IpPolicyError`."""
        name = _norm(host)
        literal = parse_ip_literal(name)
        if literal is not None:
            addresses: Sequence[str] = (str(literal),)
        else:
            pinned = self.overrides.get(name)
            if pinned is None:
                pinned = _special_use(name)
            addresses = pinned if pinned is not None else await self._resolve_name(name)
        allowed = [ip for ip in addresses if self.policy.ip_allowed(ip)]
        if not allowed:
            raise IpPolicyError(f"{name} resolves to {addresses[0]}, which is not allowed")
        return allowed

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_UNSPEC
    ) -> list[ResolveResult]:
        results: list[ResolveResult] = []
        for ip in await self.lookup(host):
            fam = socket.AF_INET6 if ":" in ip else socket.AF_INET
            if family in (socket.AF_UNSPEC, fam):
                results.append(ResolveResult(hostname=host, host=ip, port=port, family=fam, proto=0, flags=_FLAGS))
        if not results:
            raise DnsError(f"{host} has no address of the wanted family")
        return results

    async def close(self) -> None:
        for task in self._inflight.values():
            task.cancel()
        if self._dns is not None:
            await self._dns.close()
            self._dns = None

    async def _resolve_name(self, name: str) -> tuple[str, ...]:
        now = self._clock()
        entry = self._cache.get(name)
        if entry is None or entry.expires <= now:
            task = self._inflight.get(name)
            if task is None:
                task = asyncio.ensure_future(self._query(name))
                self._inflight[name] = task
                task.add_done_callback(lambda _t: self._inflight.pop(name, None))
            entry = await asyncio.shield(task)
        else:
            self._cache.move_to_end(name)
        if not entry.addresses:
            raise DnsError(entry.error)
        return entry.addresses

    async def _query(self, name: str) -> _Entry:
        if self._dns is None:
            self._dns = aiodns.DNSResolver(nameservers=self._nameservers or None, timeout=self._timeout, tries=2)
        self.queries += 1
        try:
            result = await self._dns.getaddrinfo(name, family=socket.AF_UNSPEC, type=socket.SOCK_STREAM)
        except aiodns.error.DNSError as exc:
            code = exc.args[0] if exc.args else None
            message = f"{name}: {exc.args[1] if len(exc.args) > 1 else 'lookup failed'}"
            if code not in _NEGATIVE_CODES:
                raise DnsTimeout(message) from None  # timeouts, SERVFAIL: not worth remembering, worth a retry
            return self._store(name, _Entry(self._clock() + self._negative_ttl, (), message))
        addresses: list[str] = []
        ttl = self._max_ttl
        for node in result.nodes:
            ip = node.addr[0].decode("ascii") if isinstance(node.addr[0], bytes) else str(node.addr[0])
            if ip not in addresses:
                addresses.append(ip)
            ttl = min(ttl, float(node.ttl))
        if not addresses:
            return self._store(name, _Entry(self._clock() + self._negative_ttl, (), f"{name}: no address"))
        ttl = min(self._max_ttl, max(self._min_ttl, ttl))
        return self._store(name, _Entry(self._clock() + ttl, tuple(addresses)))

    def _store(self, name: str, entry: _Entry) -> _Entry:
        self._cache[name] = entry
        self._cache.move_to_end(name)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return entry


def _special_use(name: str) -> tuple[str, ...] | None:
    """RFC 6761/7686 names answered here, never asked of a DNS server: ``localhost`` is loopback (the address
    policy then decides), ``.invalid`` and ``.onion`` do not exist. No query for them leaves the machine."""
    tld = name.rpartition(".")[2]
    if tld == "localhost":
        return ("127.0.0.1", "::1")
    if tld in ("invalid", "onion"):
        raise DnsError(f"{name}: reserved name (RFC 6761/7686), never resolved")
    return None


def _norm(host: str) -> str:
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        return host[1:-1]
    return host.rstrip(".") if host != "." else host


def _address(text: str, item: str) -> str:
    try:
        return str(ipaddress.ip_address(text.strip().strip("[]")))
    except ValueError:
        raise ConfigError(f"--resolve: {text.strip()!r} in {item!r} is not an IP address") from None
