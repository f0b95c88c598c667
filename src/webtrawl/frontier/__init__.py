"""The crawl frontier: which URL of which host to fetch next, kept in Redis so every process and node shares it.

Start with :class:`RedisFrontier` (sync) or :class:`AsyncRedisFrontier` (asyncio); the key layout is described in
:mod:`webtrawl.frontier.keys`.
"""

from webtrawl.frontier.async_frontier import AsyncRedisFrontier
from webtrawl.frontier.base import STALE, AddResult, Counters, Frontier, Held, Parked, Release, Stale, UrlAction
from webtrawl.frontier.connect import connect_async, connect_sync
from webtrawl.frontier.redis_frontier import RedisFrontier
from webtrawl.frontier.settings import FrontierSettings

__all__ = [
    "STALE",
    "AddResult",
    "AsyncRedisFrontier",
    "Counters",
    "Frontier",
    "FrontierSettings",
    "Held",
    "Parked",
    "RedisFrontier",
    "Release",
    "Stale",
    "UrlAction",
    "connect_async",
    "connect_sync",
]
