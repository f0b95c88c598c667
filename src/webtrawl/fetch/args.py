"""What a fetcher process is started with, and the Redis pool it needs: what the supervisor that starts a fetcher
and the fetcher itself share, apart from the fetch loop (``fetch/worker.py``)."""

from __future__ import annotations

import ctypes
import multiprocessing.synchronize
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path
from typing import TYPE_CHECKING

from webtrawl.config import DiscoveryOptions, ExtractionOptions, FetchOptions, Limits, Politeness, RenderOptions
from webtrawl.fetch import stats
from webtrawl.fetch.capacity import ceiling
from webtrawl.frontier import AsyncRedisFrontier, FrontierSettings, connect_async
from webtrawl.frontier.replicas import replicas_of_async
from webtrawl.frontier.retry import Outage, open_waiting_async

if TYPE_CHECKING:
    from webtrawl.fetch.route import HintsFactory

SESSIONS_PER_SLOT = 4  # sleeping sessions per unit of concurrency (each keeps one idle connection)
# On a stop, requests still running after this grace are abandoned: their URLs go back to the head of their queues
# (a stop must not wait for an 8 KB/s body up to --total). The supervisor kills a fetcher that takes much longer.
STOP_GRACE_S = 3.0


@dataclass(kw_only=True)
class FetcherArgs:
    """Everything a fetcher process needs (the option groups it uses, not the whole config); picklable for the
    fork server's start method."""

    index: int
    redis_url: str
    parser_sockets: list[Path]
    stop: multiprocessing.synchronize.Event
    budget: Synchronized[int] | None  # pages this node may still lease (None: unlimited)
    node_id: str
    cluster: bool
    frontier: FrontierSettings
    fetch: FetchOptions
    politeness: Politeness
    limits: Limits
    discovery: DiscoveryOptions
    extraction: ExtractionOptions
    rendering: RenderOptions
    stats: ctypes.Array[ctypes.c_int64] | None = None  # fetch.stats.FetcherStats.array
    # while any of these is set (memory above --max-memory, a parser's disk is full) no new URL is leased
    pauses: tuple[multiprocessing.synchronize.Event, ...] = ()
    # what the user's extraction rules ask of requests (webtrawl.extract.hints: fetch does not import extract)
    hints: HintsFactory | None = None
    # a spider's allowed_domains: a seed outside them (one 'trawl seed' queued, which no node's check saw) is not
    # fetched but recorded as refused for scope, as the parsers drop such links (node/seedscope.py for a node's own)
    allowed_domains: tuple[str, ...] = ()

    def take_budget(self, wanted: int) -> int:
        """Up to ``wanted`` pages of the node's --max-pages budget, taken (all of them if unlimited)."""
        budget = self.budget
        if budget is None:
            return wanted
        with budget.get_lock():
            granted = max(0, min(wanted, budget.value))
            budget.value -= granted
            return granted

    def give_back_budget(self, count: int) -> None:
        if self.budget is not None and count:
            with self.budget.get_lock():
                self.budget.value += count

    def report(self, fetched: int = 0, leases: int | None = None, ended: int = 0, no_proxy: bool | None = None) -> None:
        """This fetcher's numbers for the node's heartbeat and stop (its own slots of a shared array: no lock)."""
        if self.stats is not None:
            base = stats.SLOTS * self.index
            if no_proxy is not None:
                self.stats[base + stats.NO_PROXY] = int(no_proxy)
            if fetched:
                self.stats[base + stats.FETCHED] += fetched
            if leases is not None:
                self.stats[base + stats.LEASES] = leases
            if ended:
                self.stats[base + stats.ENDED] += ended

    @property
    def owner(self) -> str:
        return f"{self.node_id}/f{self.index}"


async def open_frontier(
    args: FetcherArgs, settings: FrontierSettings | None = None, outage: Outage | None = None
) -> AsyncRedisFrontier:
    """The frontier of a fetcher process, on a Redis client whose pool fits the process's concurrent commands.
    With an ``outage`` it waits for a Redis that is away, now and in every later call (see frontier/retry.py)."""

    async def opened() -> AsyncRedisFrontier:
        pool = redis_pool_size(args.fetch)
        redis = await connect_async(args.redis_url, cluster=args.cluster, max_connections=pool)
        frontier = await AsyncRedisFrontier.open(redis, settings or args.frontier, outage=outage)
        # a lease is on N replicas before its fetch starts: a failover cannot give its host to another fetcher
        frontier.replicas = await replicas_of_async(redis, (settings or args.frontier).replicas)
        return frontier

    return await opened() if outage is None else await open_waiting_async(opened, outage)


def redis_pool_size(fetch: FetchOptions) -> int:
    """Connections a fetcher may need at once (per cluster master): every task it can run (active ones and host
    sessions that wake up) with one command each, plus the lease loop and the release batcher. redis-py's pool raises
    "Too many connections" past its size (100 by default), which killed fetch tasks at the start of broad crawls;
    connections are opened only when needed, so a generous bound costs nothing while it is not reached."""
    return ceiling(fetch) * (1 + SESSIONS_PER_SLOT) + fetch.lease_batch + 8
