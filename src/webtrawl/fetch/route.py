"""Which fetcher takes a leased URL: the plain HTTP one, or the browser (``--render``, ``--render-include``).

``always`` and ``--render-include`` decide before anything is fetched. ``auto`` fetches over HTTP first and renders
what looks like a script-built shell (:mod:`webtrawl.fetch.render.shell`) or what the user's rules find no item in
(:class:`PageHints`); the host is then remembered in the frontier (its host hash), so its next leases, on any node,
say ``render`` and skip the HTTP try. Hosts this process already knows are kept in a bounded set to
spare the frontier a write per page.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from webtrawl.config import ExtractionOptions, Limits, RenderOptions
from webtrawl.fetch.render.shell import html_payload, payload_reason
from webtrawl.fetch.response import Response
from webtrawl.messages import Lease

_MAX_HOSTS = 100_000
NO_ITEMS = "no-items"  # the render reason in the page record


class PageHints(Protocol):
    """What a fetcher asks of the user's extraction rules: headers for a URL's requests, and whether the rules find
    nothing in an HTTP answer (``--render auto``). Made by the extract stage (:mod:`webtrawl.extract.hints`), which
    runs after fetch: whoever starts a fetcher hands it the factory (``FetcherArgs.hints``)."""

    @property
    def has_headers(self) -> bool: ...

    def headers(self, url: str) -> dict[str, str]: ...

    def no_items(self, url: str, status: int, headers: list[tuple[str, str]], payload: bytes) -> bool: ...


HintsFactory = Callable[[ExtractionOptions, RenderOptions], PageHints | None]


class RenderRoute:
    def __init__(self, opts: RenderOptions, limits: Limits, hints: PageHints | None = None) -> None:
        self.mode = opts.render
        self.hints = hints
        self.on = opts.enabled()
        self._include = [re.compile(p) for p in opts.render_include]
        self._max_decompressed = limits.max_decompressed
        self.hosts: set[str] = set()  # hosts known to need rendering (this process)

    def before(self, lease: Lease) -> str:
        """Why ``lease`` is rendered without an HTTP try first, or ``""``."""
        if not self.on:
            return ""
        if any(p.search(lease.url) for p in self._include):
            return "include"
        if self.mode == "always":
            return "always"
        if self.mode == "auto" and (lease.render or lease.host in self.hosts):
            self.remember(lease.host)
            return "host"
        return ""

    def after(self, url: str, resp: Response) -> str:
        """With ``auto``: why the HTTP answer ``resp`` for ``url`` should be rendered after all, or ``""``."""
        if self.mode != "auto":
            return ""
        payload = html_payload(resp, self._max_decompressed)
        if payload is None:
            return ""
        reason = payload_reason(payload)
        if not reason and self.hints is not None and self.hints.no_items(url, resp.status, resp.headers, payload):
            reason = NO_ITEMS
        return reason

    def remember(self, host: str) -> bool:
        """Note a host that needs rendering; True if it is new to this process."""
        if host in self.hosts:
            return False
        if len(self.hosts) >= _MAX_HOSTS:
            self.hosts.clear()
        self.hosts.add(host)
        return True
