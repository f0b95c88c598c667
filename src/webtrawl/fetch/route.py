"""Which fetcher takes a leased URL: the plain HTTP one, or the browser (``--render``, ``--render-include``).

``always`` and ``--render-include`` decide before anything is fetched. ``auto`` fetches over HTTP first and renders
what looks like a script-built shell (:mod:`webtrawl.fetch.render.shell`) or what the user's rules find no item in
(:mod:`webtrawl.fetch.rulehints`); the host is then remembered in the frontier (its host hash), so its next leases,
on any node, say ``render`` and skip the HTTP try. Hosts this process already knows are kept in a bounded set to
spare the frontier a write per page.
"""

from __future__ import annotations

import re

from webtrawl.config import Limits, RenderOptions
from webtrawl.fetch.render.shell import html_payload, payload_reason
from webtrawl.fetch.response import Response
from webtrawl.fetch.rulehints import NO_ITEMS, RuleHints
from webtrawl.messages import Lease

_MAX_HOSTS = 100_000


class RenderRoute:
    def __init__(self, opts: RenderOptions, limits: Limits, hints: RuleHints | None = None) -> None:
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
        if not reason and self.hints is not None and self.hints.no_items(url, resp, payload):
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
