"""Self-fencing: a fetcher never has a request running under a lease that may have expired.

A lease lasts ``--lease-ttl`` from when it was granted; then any supervisor may take it back and another node may
lease the host. So a request may start only while its lease has at least the longest a request can take (the
request's time limits) plus a margin left, and a node checks at start that a fresh lease has that much. A fetcher
cut off from Redis therefore cannot overlap another node's request on the same host: its running requests end
before its leases expire, it starts no new one while Redis is away, and a release that arrives after its lease was
taken back is refused by the frontier (``STALE``), so its page is dropped instead of stored a second time.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from webtrawl.config import CrawlConfig, FetchOptions, RenderOptions
from webtrawl.errors import InputError
from webtrawl.frontier.retry import Outage

# A fresh lease must leave a request this much room beyond its time limits: the time from the lease to the
# request's start (robots.txt from Redis, DNS). The frontier adds more on its side: an expired lease is taken back
# only at the next reclaim, and the host then waits its politeness gap from there.
FENCE_MARGIN_S = 1.0
ABANDON_S = 0.2  # a request needs this much lease left beyond its time limits to start: aborting one ends it


def request_bound(fetch: FetchOptions, rendering: RenderOptions) -> float:
    """The longest one lease's request can run: robots.txt, or the page (and its render, with --render)."""
    page = fetch.timeouts.total + (rendering.render_timeout if rendering.enabled() else 0.0)
    return max(fetch.timeouts.robots, page)


def check_lease_ttl(cfg: CrawlConfig) -> None:
    """Refuse a --lease-ttl a request could outlive: two nodes could then fetch from one host at once."""
    bound = request_bound(cfg.fetch, cfg.rendering)
    if cfg.frontier.lease_ttl < bound + FENCE_MARGIN_S:
        raise InputError(
            f"--lease-ttl {cfg.frontier.lease_ttl:g} is too short: a request may take {bound:g}s "
            f"(--total, --robots, --render-timeout), so a lease must last at least {bound + FENCE_MARGIN_S:g}s"
        )


class Fence:
    """One fetcher's lease deadlines, on the safe side (counted from before the call that granted the lease), and
    whether a request may start under a lease now. ``Fence()`` never fences (unit tests with fakes)."""

    def __init__(self, lease_ttl_s: float = float("inf"), need_s: float = 0.0, outage: Outage | None = None) -> None:
        self.lease_ttl_s = lease_ttl_s
        self.need_s = need_s  # lease time a request needs left to start: request_bound() + ABANDON_S
        self.outage = outage
        self._deadlines: dict[str, float] = {}  # token -> when its lease may expire (time.monotonic())

    def leased(self, tokens: Iterable[str], asked: float, wait_s: float = 0.0) -> None:
        """Leases granted by a call sent at ``asked`` (a held host's next lease: due ``wait_s`` later)."""
        for token in tokens:
            self._deadlines[token] = asked + wait_s + self.lease_ttl_s

    def released(self, token: str) -> None:
        self._deadlines.pop(token, None)

    def why_not(self, token: str) -> str:
        """Why no request may start under the lease now ("" if one may): Redis is away (this node is cut off, its
        leases may be taken back), or the lease could expire before the request ends."""
        if self.outage is not None and self.outage.down:
            return "Redis is away"
        deadline = self._deadlines.get(token)
        if deadline is not None and deadline - time.monotonic() < self.need_s:
            return "its lease could expire before the request ends"
        return ""
