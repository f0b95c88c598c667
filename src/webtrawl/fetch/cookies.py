"""--cookies: one cookie jar per crawl, as Scrapy keeps one per spider, kept in the crawl's Redis.

A cookie a site sets is sent on every later request it applies to, whichever fetcher process, on whichever node,
leases the host, and after a resume. Each fetcher keeps aiohttp's jar (:class:`CrawlJar`, a
:class:`~webtrawl.fetch.wire.RawCookieJar`): aiohttp decides what a Set-Cookie sets (domain, path, expiry, host-only)
and what a request sends (domain and path match, Secure), nothing here matches cookies. The jar is the process's copy
of the crawl's jar, which lives in Redis as one hash per registered domain (the public suffix list: every cookie a
host may set or be sent is for a domain of its own registered domain), one field per cookie in the form aiohttp
saves a jar to a file (:meth:`aiohttp.CookieJar.save`: value, attributes, host-only, absolute expiry):

- **load**: when the lease loop leases hosts (:class:`CookieLeases`), one pipeline of HGETALL for their registered
  domains (one round trip per lease call, not per request) replaces the jar's cookies of those domains with the
  stored ones (unchanged cookies are left as they are). A host held for a session (fetch/visit.py) is not read again.
- **save**: a response whose Set-Cookie changed the jar (aiohttp's update, compared before and after for the
  response host's domains) writes the cookies it set or deleted, field by field (HSET/HDEL), before the fetch
  returns, so before the host is released and another fetcher can lease it. A response without Set-Cookie costs
  nothing; writes of concurrent responses go out together, one at a time, in order.

Off (the default) the client has aiohttp's DummyCookieJar and none of this runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from http.cookies import Morsel
from typing import Any, Protocol

import msgspec
from yarl import URL

from webtrawl.domains import registered_domain
from webtrawl.fetch.wire import RawCookieJar
from webtrawl.messages import Lease

_CookieKey = tuple[str, str, str]  # aiohttp's: (domain, path without its trailing /, name)
Changes = dict[str, dict[bytes, bytes | None]]  # registered domain -> field -> value (None: deleted)
# the attributes aiohttp saves (CookieJar.save): all but the relative expiry, saved as an absolute deadline
_ATTRS = tuple(a for a in Morsel._reserved if a not in ("max-age", "expires"))  # type: ignore[attr-defined]
# Registered domains whose cookies a jar remembers holding (CrawlJar._known); past it, forgotten: aiohttp's jar holds
# at most 3,300 cookies, so most of them are gone anyway. A forgotten domain's stored cookies are all taken in again
# at its next load (one deleted by another fetcher meanwhile stays in this jar until it expires).
_KNOWN_CAP = 10_000


class CookieStore(Protocol):
    """Where the crawl's jar lives (the async Redis frontier: frontier/cookies.py)."""

    async def load_cookies(self, domains: Sequence[str]) -> list[dict[bytes, bytes]]: ...

    async def save_cookies(self, changes: Mapping[str, Mapping[bytes, bytes | None]]) -> None: ...


def _domains_of(host: str) -> set[str]:
    """The cookie domains a response from ``host`` may change: the host and its parent domains."""
    labels = host.split(".")
    return {".".join(labels[i:]) for i in range(len(labels))} | {host}


def _field(key: _CookieKey) -> bytes:
    return msgspec.json.encode(key)


class CrawlJar(RawCookieJar):
    """A fetcher's copy of the crawl's jar: notes what each response changed (``pending``, per registered domain)
    and takes the stored cookies of a domain in (:meth:`replace`)."""

    def __init__(self) -> None:
        super().__init__()
        self.generation = 0  # counts the updates that changed something
        self.pending: Changes = {}  # changes not yet taken for a write
        self.changed_at: dict[str, int] = {}  # registered domain -> the generation that last changed it
        self._known: dict[str, set[_CookieKey]] = {}  # registered domain -> its cookies this jar holds
        self._tracking = False

    def update_cookies_from_headers(self, headers: Sequence[str], response_url: URL) -> None:
        """What aiohttp's session calls with each answer's Set-Cookie lines."""
        with self._changes(response_url):
            super().update_cookies_from_headers(headers, response_url)

    @contextlib.contextmanager
    def _changes(self, url: URL) -> Iterator[None]:
        host = url.raw_host
        if self._tracking or not host:
            yield
            return
        self._tracking = True
        try:
            domains = _domains_of(host)
            before = self._near(domains)
            yield
            after = self._near(domains)
        finally:
            self._tracking = False
        self._note(before, after)

    def _near(self, domains: set[str]) -> dict[_CookieKey, bytes]:
        return {
            (domain, path, name): self._encode((domain, path, name), morsel)
            for (domain, path), cookie in self._cookies.items()
            if domain in domains
            for name, morsel in cookie.items()
        }

    def _encode(self, key: _CookieKey, morsel: Morsel[str]) -> bytes:
        """One cookie as aiohttp's CookieJar.save writes it."""
        data: dict[str, Any] = {"key": morsel.key, "value": morsel.value, "coded_value": morsel.coded_value}
        for attr in _ATTRS:
            if value := morsel[attr]:
                data[attr] = value
        if key in self._host_only_cookies:
            data["host_only"] = True
        if (deadline := self._expirations.get(key)) is not None:
            data["expires_timestamp"] = deadline
        return msgspec.json.encode(data)

    def _note(self, before: dict[_CookieKey, bytes], after: dict[_CookieKey, bytes]) -> None:
        changed = set()
        for key in before.keys() | after.keys():
            value = after.get(key)
            if before.get(key) == value:
                continue
            group = registered_domain(key[0])  # the hash that keeps the cookie
            self.pending.setdefault(group, {})[_field(key)] = value
            if len(self._known) >= _KNOWN_CAP and group not in self._known:
                self._known.clear()
            known = self._known.setdefault(group, set())
            if value is None:
                known.discard(key)
            else:
                known.add(key)
            changed.add(group)
        if changed:
            self.generation += 1
            for group in changed:
                self.changed_at[group] = self.generation

    def held_for(self, host: str) -> Iterator[tuple[str, str, Morsel[str], bool, float | None]]:
        """The unexpired cookies a request to ``host`` may be sent (any path): (domain, path, morsel, host-only,
        absolute expiry), for a render's browser (fetch/render/cookies.py)."""
        self._do_expiration()
        domains = _domains_of(host)
        for (domain, path), cookie in list(self._cookies.items()):
            if domain not in domains:
                continue
            for name, morsel in cookie.items():
                key = (domain, path, name)
                host_only = key in self._host_only_cookies
                if not host_only or domain == host:
                    yield domain, path, morsel, host_only, self._expirations.get(key)

    def value_of(self, domain: str, path: str, name: str) -> str | None:
        """The value (as sent) of the cookie of that domain, path (without its trailing /) and name, if held."""
        morsel = self._cookies[(domain, path)].get(name) if (domain, path) in self._cookies else None
        return None if morsel is None else morsel.coded_value

    def set_from(self, url: URL, cookies: Iterable[tuple[Morsel[str], float | None]]) -> None:
        """Cookies a page at ``url`` set (its scripts: fetch/render/cookies.py), each with its absolute expiry, by
        aiohttp's rules for what a response from there may set; the changes pending as a Set-Cookie's are."""
        with self._changes(url):
            for morsel, expiry in cookies:
                self._update_cookies({morsel.key: morsel}, url, copy_morsels=False, expiration=expiry)

    def take_pending(self) -> Changes:
        taken, self.pending = self.pending, {}
        return taken

    def give_back(self, changes: Changes) -> None:
        """Changes whose write failed: pending again, under any newer ones."""
        for group, fields in changes.items():
            mine = self.pending.setdefault(group, {})
            for field, value in fields.items():
                mine.setdefault(field, value)

    def replace(self, group: str, stored: Mapping[bytes, bytes]) -> list[bytes]:
        """Make this jar's cookies of registered domain ``group`` the ``stored`` ones; returns the fields of those
        stored that have expired (or cannot be read), for deletion."""
        current: dict[bytes, tuple[_CookieKey, bytes]] = {}
        for key in self._known.get(group, ()):
            morsel = self._cookies[key[:2]].get(key[2]) if key[:2] in self._cookies else None
            if morsel is not None:
                current[_field(key)] = (key, self._encode(key, morsel))
        gone = [key for field, (key, _) in current.items() if field not in stored]
        if gone:
            self._delete_cookies(gone)
        now = time.time()
        known: set[_CookieKey] = set()
        dead: list[bytes] = []
        for field, value in stored.items():
            have = current.get(field)
            if have is not None and have[1] == value:
                known.add(have[0])
                continue
            try:
                loaded = self._load(field, value, now)
            except (msgspec.DecodeError, ValueError, TypeError, KeyError):
                loaded = None
            if loaded is None:
                dead.append(field)
            else:
                known.add(loaded)
        if known:
            if len(self._known) >= _KNOWN_CAP and group not in self._known:
                self._known.clear()
            self._known[group] = known
        else:
            self._known.pop(group, None)
        return dead

    def _load(self, field: bytes, value: bytes, now: float) -> _CookieKey | None:
        """One stored cookie into the jar, as aiohttp's CookieJar.load takes one in; None if it has expired."""
        domain, path, name = msgspec.json.decode(field, type=tuple[str, str, str])
        data = msgspec.json.decode(value, type=dict[str, Any])
        deadline = data.get("expires_timestamp")
        if deadline is not None and float(deadline) <= now:
            return None
        morsel: Morsel[str] = Morsel()
        morsel.__setstate__({"key": data["key"], "value": data["value"], "coded_value": data["coded_value"]})  # type: ignore[attr-defined]
        for attr in _ATTRS:
            if attr in data:
                morsel[attr] = data[attr]
        if data.get("host_only"):
            morsel["domain"] = ""  # aiohttp marks it host-only again
        url = URL.build(scheme="https", host=domain)
        self._update_cookies(
            {name: morsel},
            url,
            copy_morsels=False,
            expiration=float(deadline) if deadline is not None else None,
        )
        return (domain, path, name)


class SharedCookies:
    """The crawl's jar as one fetcher process sees it: its :class:`CrawlJar` synced with the ``store``."""

    def __init__(self, jar: CrawlJar, store: CookieStore) -> None:
        self.jar, self.store = jar, store
        self._written = 0  # every change up to this generation is in the store
        self._writing: asyncio.Future[None] | None = None
        self._reads: list[int] = []  # the _written of each load waiting for its reply

    async def load(self, hosts: Iterable[str]) -> None:
        """The stored cookies of the registered domains of ``hosts`` (just leased) into the jar."""
        groups = list(dict.fromkeys(registered_domain(host) for host in hosts))
        written = self._written  # what the store held of ours when asked
        self._reads.append(written)
        try:
            replies = await self.store.load_cookies(groups)
        finally:
            self._reads.remove(written)
        for group, stored in zip(groups, replies, strict=True):
            if self.jar.changed_at.get(group, 0) > written:
                continue  # this process changed them since: its own are newer (and on their way)
            dead = self.jar.replace(group, stored)
            if dead:  # deleted with the next write
                fields = self.jar.pending.setdefault(group, {})
                for field in dead:
                    fields.setdefault(field, None)

    async def written(self, mark: int) -> None:
        """After a response: if the jar changed since generation ``mark``, return once the change is stored."""
        target = self.jar.generation
        while self._written < target and target != mark:
            if self._writing is None:
                self._writing = asyncio.ensure_future(self._write())
            await asyncio.shield(self._writing)

    async def _write(self) -> None:
        try:
            generation = self.jar.generation
            changes = self.jar.take_pending()
            if changes:
                try:
                    await self.store.save_cookies(changes)
                except BaseException:
                    self.jar.give_back(changes)
                    raise
            self._written = max(self._written, generation)
            changed = self.jar.changed_at
            if changed:  # only what changed since is worth remembering, for loads sent since (see load)
                since = min([generation, *self._reads])
                self.jar.changed_at = {group: n for group, n in changed.items() if n > since}
        finally:
            self._writing = None


class LeaseSource(Protocol):
    async def lease(self, owner: str, max_hosts: int) -> list[Lease]: ...

    def next_lease_in(self) -> float: ...

    async def watch_ready(self, woken: Callable[[], None]) -> None: ...


class CookieLeases:
    """A lease source whose leases come with their hosts' stored cookies in the jar (fetch/worker.py)."""

    def __init__(self, source: LeaseSource, cookies: SharedCookies) -> None:
        self.source, self.cookies = source, cookies

    async def lease(self, owner: str, max_hosts: int) -> list[Lease]:
        leases = await self.source.lease(owner, max_hosts)
        if leases:
            await self.cookies.load(lease.host for lease in leases)
        return leases

    def next_lease_in(self) -> float:
        return self.source.next_lease_in()

    async def watch_ready(self, woken: Callable[[], None]) -> None:
        await self.source.watch_ready(woken)
