"""The frontier in Redis for asyncio code (fetchers): the same steps as :class:`RedisFrontier`, awaited.

See :mod:`webtrawl.frontier.keys` for the key layout and :mod:`webtrawl.frontier.commands` for the logic.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import redis

from webtrawl.frontier.base import AddResult, Counters, Held, Parked, Release, Stale
from webtrawl.frontier.commands import FrontierCore, first_error
from webtrawl.frontier.connect import AsyncClient, is_cluster, one_line, transport_errors
from webtrawl.frontier.cookies import Changes, Fields, load_cookies, save_cookies
from webtrawl.frontier.giveup import GivenUp
from webtrawl.frontier.opening import CoreView, open_core
from webtrawl.frontier.replicas import node_of_cluster
from webtrawl.frontier.retry import Outage, redo, waiting
from webtrawl.frontier.scripts import SCRIPTS, Call, Steps, T, load_calls
from webtrawl.frontier.settings import FrontierSettings
from webtrawl.messages import Completion, Lease, NewUrl

log = logging.getLogger(__name__)

_HEAR_S = 1.0  # a listen's longest read: below the client's socket timeout, so a quiet channel is not an error
_RELISTEN_S = 1.0  # after the channel's connection failed (Redis away): the polls go on meanwhile


async def _pipeline(client: AsyncClient, calls: Sequence[Call], outage: Outage | None) -> list[Any]:
    while True:
        pipe = client.pipeline(transaction=False)
        for call in calls:
            call.queue(pipe)
        sent_at = time.monotonic()
        try:
            replies = await pipe.execute(raise_on_error=False)
        except Exception as exc:
            await _wait(client, waiting(exc, outage), exc)
            continue
        if outage is not None:
            outage.answered(sent_at)
        return replies


async def _wait(client: AsyncClient, outage: Outage, exc: BaseException) -> None:
    await outage.wait(exc)  # a cluster client learns the new slot map by itself (retry.py)


async def _load_scripts(client: AsyncClient, outage: Outage | None) -> None:
    """After NOSCRIPT. A cluster client sends SCRIPT LOAD to every master (a restarted or new master lacks them)."""
    if not is_cluster(client):
        first_error(await _pipeline(client, load_calls(), outage))
        return
    while True:
        try:
            for script in SCRIPTS.values():
                await client.script_load(script.source)
            return
        except Exception as exc:
            await _wait(client, waiting(exc, outage), exc)


async def _execute(client: AsyncClient, calls: Sequence[Call], outage: Outage | None = None) -> list[Any]:
    if not calls:  # nothing sent: says nothing about Redis (an outage must not look over)
        return []
    replies = await _pipeline(client, calls, outage)
    loads = 0
    while (plan := redo(replies, outage, loads)).again:
        if plan.transient is not None:
            await _wait(client, waiting(plan.transient, outage), plan.transient)
        if plan.noscript:
            loads += 1
            await _load_scripts(client, outage)
        again = await _pipeline(client, [calls[i] for i in plan.again], outage)
        for i, reply in zip(plan.again, again, strict=True):
            replies[i] = reply
    if outage is not None:
        outage.ok()
    first_error(replies)
    return replies


async def _drive(client: AsyncClient, steps: Steps[T], outage: Outage | None = None) -> T:
    try:
        calls = next(steps)
        while True:
            calls = steps.send(await _execute(client, calls, outage))
    except StopIteration as stop:
        result: T = stop.value
        return result


class AsyncRedisFrontier(CoreView):
    """The :class:`webtrawl.frontier.base.Frontier` methods as coroutines, on an async Redis or RedisCluster client."""

    def __init__(self, client: AsyncClient, core: FrontierCore, outage: Outage | None = None) -> None:
        self.client = client
        self.core = core
        if is_cluster(client):
            core.node_of = node_of_cluster(client)
        self.outage = outage  # set: calls wait out a Redis that is away instead of raising (see retry.py)
        self.replicas = 0  # leases and releases wait for this many replicas (replicas.py)

    @classmethod
    async def open(
        cls,
        client: AsyncClient,
        settings: FrontierSettings | None = None,
        *,
        create: bool = True,
        outage: Outage | None = None,
    ) -> AsyncRedisFrontier:
        core = await _drive(client, open_core(settings or FrontierSettings(), create, is_cluster(client)), outage)
        return cls(client, core, outage)

    async def _run(self, steps: Steps[T]) -> T:
        return await _drive(self.client, steps, self.outage)

    async def add(self, urls: Sequence[NewUrl]) -> AddResult:
        return await self._run(self.core.add(urls))

    async def watch_ready(self, woken: Callable[[], None]) -> None:
        """Until cancelled, apply the ready hints of every process's adds (add.lua) and call ``woken`` after each:
        a fetcher that found nothing to lease asks the shards that got work at once, instead of at their next
        poll (``empty_poll_ms``), which a crawl's first seconds pay once per generation of new hosts. Hints only:
        a message lost while Redis is away costs that poll, nothing else. A cluster's core has no channel
        (``FrontierCore.ready_channel``): this returns at once and its fetchers poll."""
        channel = self.core.ready_channel
        if not channel:
            return
        while True:
            try:
                async with self.client.pubsub(ignore_subscribe_messages=True) as pubsub:
                    await pubsub.subscribe(channel)
                    while True:
                        message = await pubsub.get_message(timeout=_HEAR_S)
                        if message is not None:
                            self.core.ready_hint(message["data"])
                            woken()
            except transport_errors():
                await asyncio.sleep(_RELISTEN_S)
            except redis.ResponseError as exc:  # an ACL without the channel: the polls find new hosts
                log.info("not listening for new hosts on %s (%s): found at the next poll", channel, one_line(exc))
                return

    async def lease(self, owner: str, max_hosts: int) -> list[Lease]:
        return await self._run(self.core.lease(owner, max_hosts, self.replicas))

    async def mark_render(self, host: str) -> None:
        await self._run(self.core.mark_render(host))

    async def release(self, releases: Sequence[Release]) -> list[Held | Stale | Parked | None]:
        return await self._run(self.core.release(releases, self.replicas))

    async def complete(self, completions: Sequence[Completion]) -> list[Stale | None]:
        return await self._run(self.core.complete(completions))

    async def reclaim_expired(self) -> int:
        return await self._run(self.core.reclaim("expired"))

    async def reclaim_owner(self, owner_prefix: str) -> int:
        return await self._run(self.core.reclaim("owner", owner_prefix))

    async def reclaim_tokens(self, leases: Sequence[tuple[int, str]]) -> int:
        """(shard, token): pages handed to a parser that died; those it had not completed go back to their queues."""
        return await self._run(self.core.reclaim_tokens(leases))

    async def counters(self) -> Counters:
        return await self._run(self.core.counters())

    async def is_finished(self) -> bool:
        return await self._run(self.core.is_finished())

    async def recrawl_state(self, shard: int, url: str) -> str:
        """The URL's state in the recrawl set ("" if none): its validators and digest from the last fetch."""
        return await self._run(self.core.recrawl_state(shard, url))

    async def count(self, counters: dict[str, int]) -> None:
        await self._run(self.core.count(counters))

    async def recrawl_states(self, shard: int, urls: Sequence[str]) -> list[str]:
        return await self._run(self.core.recrawl_states(shard, urls))

    async def give_up(self, shard: int, host: str, owner: str, origin: str = "") -> GivenUp:
        """Up to a chunk of the queued URLs of a host that is down (parked; or ``origin``'s, whose robots.txt was
        given up), leased to ``owner`` for their failed pages (giveup.py)."""
        return await self._run(self.core.give_up(shard, host, owner, origin=origin))

    async def take_address(self, address: str, token: str, hold_ms: int) -> int:
        """0 if the lease ``token`` now holds ``address`` (--politeness-key ip), else ms until it may be free."""
        return await self._run(self.core.gate("take", address, token, hold_ms))

    async def free_address(self, address: str, token: str, gap_ms: int) -> None:
        """End the request on ``address``: the next one may start ``gap_ms`` from now."""
        await self._run(self.core.gate("free", address, token, gap_ms))

    async def get_robots(self, origin: str) -> bytes | None:
        return await self._run(self.core.get_robots(origin))

    async def set_robots(self, origin: str, value: bytes, ttl_s: float) -> None:
        await self._run(self.core.set_robots(origin, value, ttl_s))

    async def load_cookies(self, domains: Sequence[str]) -> list[Fields]:
        """--cookies: the crawl's stored cookies of each registered domain (frontier/cookies.py)."""
        return await self._run(load_cookies(self.core.settings.prefix, self.core.shards, domains))

    async def save_cookies(self, changes: Changes) -> None:
        """--cookies: write the cookies responses set or deleted (field None), per registered domain."""
        await self._run(save_cookies(self.core.settings.prefix, self.core.shards, changes))

    async def add_seed_hosts(self, items: Iterable[str]) -> int:
        return await self._run(self.core.add_seed_hosts(items))

    async def seed_hosts(self) -> set[str]:
        return await self._run(self.core.seed_hosts())
