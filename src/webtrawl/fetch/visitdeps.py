"""What one fetcher's visits talk to (:class:`VisitDeps`): the frontier, the robots cache, the fetchers, the parsers'
channel and the connection pool, each named by the little it is asked for, so tests hand fakes
(:mod:`webtrawl.fetch.testing`)."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from webtrawl.fetch.base import Fetchers
from webtrawl.fetch.batcher import ReleaseBatcher
from webtrawl.fetch.discovery import AddressGate
from webtrawl.fetch.fence import Fence
from webtrawl.fetch.robots import RobotsCache
from webtrawl.fetch.route import RenderRoute
from webtrawl.frontier.giveup import GivenUp
from webtrawl.messages import Page


class VisitFrontier(Protocol):
    """What a visit asks of the frontier besides releases (the async Redis frontier; a fake in tests)."""

    async def recrawl_state(self, shard: int, url: str) -> str: ...

    async def mark_render(self, host: str) -> None: ...

    async def count(self, counters: dict[str, int]) -> None: ...

    async def recrawl_states(self, shard: int, urls: Sequence[str]) -> list[str]: ...

    async def give_up(self, shard: int, host: str, owner: str, origin: str = "") -> GivenUp:
        """Up to a chunk of the queued URLs of a host that is down (parked; or ``origin``'s, whose robots.txt was
        given up), leased to ``owner`` for their failed pages (giveup.py)."""
        ...


class PageChannel(Protocol):
    """Where fetched pages go: the parsers (``pagepipe.PageSender``)."""

    async def send(self, page: Page, body_parts: Sequence[bytes] = ()) -> None: ...


class Connections(Protocol):
    """What host sessions need of the connection pool (``HttpClient``)."""

    keepalive_s: float
    max_idle: int

    def keeping_idle(self, url: str) -> contextlib.AbstractContextManager[None]: ...


@dataclass
class VisitDeps:
    frontier: VisitFrontier
    releases: ReleaseBatcher
    robots: RobotsCache
    fetchers: Fetchers
    route: RenderRoute
    sender: PageChannel
    connections: Connections
    gate: AddressGate | None = None  # --politeness-key ip: the address gates
    fence: Fence = field(default_factory=Fence)  # self-fencing (fetch/fence.py); Fence() never fences
