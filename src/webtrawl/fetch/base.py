"""The fetcher seam: how a leased URL becomes a :class:`Response`, whatever does the fetching.

A fetcher has a **role**: ``plain`` fetches every URL first (built in: ``http``, one GET over the process's aiohttp
client), ``render`` takes what the route (:mod:`webtrawl.fetch.route`) sends to a browser (built in: ``browser``,
Chromium through Playwright, every request it makes fetched by that same client). The fetcher process builds them
from names (:func:`build_fetchers`): the built-ins, or a user's class named by import path (``--fetcher
package.module:Class?key=value&...``, built as ``Class(ctx, **{key: value})`` with a :class:`FetcherContext`) that
takes the place of the built-in of its role. Leases, robots.txt, politeness and the parser hand-off stay in the
worker, so a new way of fetching is one class. :mod:`webtrawl.fetch.testing` has a fake one for tests.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from webtrawl.config import FetchOptions, Limits, RenderOptions
from webtrawl.errors import ConfigError
from webtrawl.fetch.response import Response
from webtrawl.politeness import RobotsRules

if TYPE_CHECKING:
    from webtrawl.fetch.client import HttpClient
    from webtrawl.fetch.robots import RobotsCache

ROLES = ("plain", "render")
BUILTIN = {"http": "webtrawl.fetch.base:HttpFetcher", "browser": "webtrawl.fetch.render:open_browser_fetcher"}
_DEFAULT = {"plain": "http", "render": "browser"}


class FetcherBusy(Exception):
    """The fetcher cannot take this URL in time (every renderer is busy): give the URL back, it is not the host's
    failure (a retry is used: once they are all used up the URL is recorded with ``reason``)."""

    reason = "fetcher-busy"


class FetchRequest(msgspec.Struct, frozen=True):
    """What the worker asks of a fetcher for one leased URL."""

    url: str
    reason: str = ""  # why this fetcher was chosen (a render's reason ends up in the page record)
    prior: Response | None = None  # an HTTP answer already received for ``url`` (--render auto): reuse it
    headers: dict[str, str] = msgspec.field(default_factory=dict)  # more request headers (a recrawl's validators)


class Fetcher(Protocol):
    """Fetches one URL; raises a :mod:`webtrawl.errors` ``TransportError`` or ``PolicyError`` on failure, or
    :class:`FetcherBusy` to give the URL back untried. A redirect is returned as it came, never followed.

    ``rules`` are the page origin's robots.txt rules (already checked for ``request.url``): a fetcher that makes
    more requests (a browser loading scripts) checks each of them too. Optional: ``waiting``, how many requests
    wait for this fetcher's capacity (the worker leases nothing new while any do)."""

    name: str
    role: str  # one of ROLES

    async def fetch(self, request: FetchRequest, rules: RobotsRules) -> Response: ...

    async def close(self) -> None: ...


@dataclass
class FetcherContext:
    """What a fetcher is built with, inside the fetcher process."""

    fetch: FetchOptions
    rendering: RenderOptions
    limits: Limits
    lease_ttl: float  # seconds a lease lasts: a fetch must end well before
    client: HttpClient  # the process's HTTP client (policy, resolver, pool): use it for every request
    robots: RobotsCache  # robots.txt of any origin (a browser's subrequests)


@dataclass
class Fetchers:
    """The fetchers of one process, by role."""

    plain: Fetcher
    render: Fetcher | None = None

    @property
    def waiting(self) -> int:
        return sum(getattr(fetcher, "waiting", 0) for fetcher in (self.plain, self.render) if fetcher is not None)

    async def close(self) -> None:
        for fetcher in (self.render, self.plain):
            if fetcher is not None:
                await fetcher.close()


class HttpFetcher:
    """The plain fetch: one GET, no redirects followed, exactly as the server sent it."""

    name = "http"
    role = "plain"

    def __init__(self, ctx: FetcherContext) -> None:
        self.client = ctx.client
        # The body stays in its chunks (HttpClient.fetch's ``parts``) unless a render route reads it (fetch/route.py)
        self._parts = not ctx.rendering.enabled()

    async def fetch(self, request: FetchRequest, rules: RobotsRules) -> Response:
        if request.prior is not None:
            return request.prior
        return await self.client.fetch(request.url, headers=request.headers or None, parts=self._parts)

    async def close(self) -> None:
        """The client belongs to the worker (robots.txt uses it too)."""


def fetcher_class(name: str) -> Any:
    """The factory ``name`` stands for (a built-in's, or a user's class, imported); ConfigError if it is none."""
    from webtrawl.importpath import load_object

    path = name.partition("?")[0]
    found = load_object(BUILTIN.get(path, path), "--fetcher")
    missing = [method for method in ("fetch", "close") if not callable(getattr(found, method, None))]
    if path not in BUILTIN and (not isinstance(found, type) or missing or getattr(found, "role", None) not in ROLES):
        raise ConfigError(f"--fetcher {name}: not a Fetcher class (fetch, close, and a role: {' or '.join(ROLES)})")
    return found


def check_fetchers(names: Sequence[str]) -> None:
    """At start (``trawl crawl``): every name imports and is a Fetcher class, at most one per role."""
    roles: dict[str, str] = {}
    for name in names:
        path = name.partition("?")[0]
        cls = fetcher_class(name)
        role = _role_of_builtin(path) if path in BUILTIN else cls.role
        if path not in BUILTIN:
            _check_options(name, cls)
        if roles.setdefault(role, name) != name:
            raise ConfigError(f"--fetcher {name}: {roles[role]} already fetches for the {role} role")


def _check_options(name: str, cls: Any) -> None:
    """The query's options are keywords the class takes, as a sink's are checked."""
    from webtrawl.importpath import check_options

    options = dict(urllib.parse.parse_qsl(name.partition("?")[2], keep_blank_values=True))
    check_options(cls, f"--fetcher {name}: {name.partition('?')[0]}(ctx, **options)", None, **options)


def build_fetchers(names: Sequence[str], ctx: FetcherContext) -> Fetchers:
    """The fetchers ``--fetcher`` names, one per role; the built-in of a role nobody named fills it (``render``
    only when rendering is on: Playwright is imported only then)."""
    by_role: dict[str, Fetcher] = {}
    wanted = list(names)
    for role, name in _DEFAULT.items():
        if role == "plain" or ctx.rendering.enabled():
            wanted.append(name)
    for name in wanted:
        if name in BUILTIN and _role_of_builtin(name) in by_role:
            continue  # a user's fetcher (or the same name twice) took its role
        options = dict(urllib.parse.parse_qsl(name.partition("?")[2], keep_blank_values=True))
        fetcher: Fetcher = fetcher_class(name)(ctx, **options)
        if fetcher.role in by_role:
            raise ConfigError(f"--fetcher {name}: two fetchers for the {fetcher.role} role")
        by_role[fetcher.role] = fetcher
    return Fetchers(by_role["plain"], by_role.get("render"))


def _role_of_builtin(name: str) -> str:
    return next(role for role, builtin in _DEFAULT.items() if builtin == name.partition("?")[0])
