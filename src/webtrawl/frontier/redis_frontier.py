"""The frontier in Redis, synchronous client (parsers, supervisor, tests).

The key layout (hash-tagged virtual shards, per-host FIFO lists, ready sorted sets, lease records, Bloom bitmaps) is
documented in :mod:`webtrawl.frontier.keys`; the logic (which scripts with which arguments, how replies decode) is in
:mod:`webtrawl.frontier.commands` and the Lua scripts under ``frontier/scripts/``. Every script touches the keys of
one shard only, so the same code runs on Redis Cluster. This class only sends pipelines: one round trip per call
(plus one per second for the frontier-cap estimate, and the rare re-load after NOSCRIPT).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from webtrawl.frontier.base import AddResult, Counters, Held, Parked, Release, Stale
from webtrawl.frontier.commands import FrontierCore, first_error
from webtrawl.frontier.connect import SyncClient, is_cluster
from webtrawl.frontier.giveup import GIVE_UP_CHUNK, GivenUp
from webtrawl.frontier.opening import CoreView, open_core
from webtrawl.frontier.replicas import node_of_cluster
from webtrawl.frontier.resend import RecentCompletions
from webtrawl.frontier.retry import Outage, is_transient, redo, refresh_slots, waiting
from webtrawl.frontier.scripts import SCRIPTS, Call, Steps, T, load_calls
from webtrawl.frontier.settings import FrontierSettings
from webtrawl.messages import Completion, Lease, NewUrl, RecrawlHint

log = logging.getLogger("webtrawl.frontier")


def _pipeline(client: SyncClient, calls: Sequence[Call], outage: Outage | None) -> list[Any]:
    while True:
        pipe = client.pipeline(transaction=False)
        for call in calls:
            call.queue(pipe)
        sent_at = time.monotonic()
        try:
            replies = pipe.execute(raise_on_error=False)
        except Exception as exc:
            _wait(client, waiting(exc, outage), exc)
            continue
        if outage is not None:
            outage.answered(sent_at)
        return replies


def _wait(client: SyncClient, outage: Outage, exc: BaseException) -> None:
    outage.wait_sync(exc)
    if is_cluster(client):
        refresh_slots(client)


def _load_scripts(client: SyncClient, outage: Outage | None) -> None:
    """After NOSCRIPT. A cluster client sends SCRIPT LOAD to every master (a restarted or new master lacks them)."""
    if not is_cluster(client):
        first_error(_pipeline(client, load_calls(), outage))
        return
    while True:
        try:
            for script in SCRIPTS.values():
                client.script_load(script.source)
            return
        except Exception as exc:
            _wait(client, waiting(exc, outage), exc)


def _execute(client: SyncClient, calls: Sequence[Call], outage: Outage | None = None) -> list[Any]:
    if not calls:  # nothing sent: says nothing about Redis (an outage must not look over)
        return []
    replies = _pipeline(client, calls, outage)
    loads = 0
    while (plan := redo(replies, outage, loads)).again:
        if plan.transient is not None:
            _wait(client, waiting(plan.transient, outage), plan.transient)
        if plan.noscript:
            loads += 1
            _load_scripts(client, outage)
        for i, reply in zip(plan.again, _pipeline(client, [calls[i] for i in plan.again], outage), strict=True):
            replies[i] = reply
    if outage is not None:
        outage.ok()
    first_error(replies)
    return replies


def _drive(client: SyncClient, steps: Steps[T], outage: Outage | None = None) -> T:
    try:
        calls = next(steps)
        while True:
            calls = steps.send(_execute(client, calls, outage))
    except StopIteration as stop:
        result: T = stop.value
        return result


class RedisFrontier(CoreView):
    """Implements :class:`webtrawl.frontier.base.Frontier` on a ``redis.Redis`` or ``RedisCluster`` client (bytes)."""

    def __init__(self, client: SyncClient, core: FrontierCore, outage: Outage | None = None) -> None:
        self.client = client
        self.core = core
        if is_cluster(client):
            core.node_of = node_of_cluster(client)
        self.outage = outage  # set: calls wait out a Redis that is away instead of raising (see retry.py)
        self.replicas = 0  # add(), lease() and release() wait for this many replicas (replicas.py)
        self._recent: RecentCompletions | None = None  # a parser's completions, to send again if lost (resend.py)

    @classmethod
    def open(
        cls,
        client: SyncClient,
        settings: FrontierSettings | None = None,
        *,
        create: bool = True,
        outage: Outage | None = None,
    ) -> RedisFrontier:
        """Create the crawl's meta in Redis, or load it (stored shards and Bloom size win over ``settings``).

        ``create=False``: only open an existing crawl (StateError if there is none), for read-only tools.
        """
        core = _drive(client, open_core(settings or FrontierSettings(), create, is_cluster(client)), outage)
        return cls(client, core, outage)

    def _run(self, steps: Steps[T]) -> T:
        return _drive(self.client, steps, self.outage)

    def add(self, urls: Sequence[NewUrl]) -> AddResult:
        """With ``replicas`` set (the parsers, --redis-replicas) the URLs are on that many replicas on return."""
        result = self._run(self.core.add(urls, self.replicas))
        if not result.acknowledged and self._recent is not None and self._recent.resend:
            self._recent.unsure += urls  # kept with the next completion call, to add again if a failover lost it
        return result

    def lease(self, owner: str, max_hosts: int) -> list[Lease]:
        return self._run(self.core.lease(owner, max_hosts, self.replicas))

    def mark_render(self, host: str) -> None:
        self._run(self.core.mark_render(host))

    def release(self, releases: Sequence[Release]) -> list[Held | Stale | Parked | None]:
        return self._run(self.core.release(releases, self.replicas))

    def complete(self, completions: Sequence[Completion]) -> list[Stale | None]:
        if self._recent is not None:
            self._recent.begin()
        answers = self._run(self.core.complete(completions, recent=self._recent))
        self._send_lost()
        self.check_completions()  # the shards this call did not touch (resend.py): a busy parser's too
        return answers

    def completion_mark(self) -> int:
        """A number below this parser's completion calls from now on, above its earlier ones (0: no watermark),
        kept with a batch logged ready: :meth:`complete_redo` tells by it whether the batch's call ran."""
        return 0 if self._recent is None else self._recent.next_seq()

    def complete_redo(self, completions: Sequence[Completion], parser: str, since: int) -> list[Stale | None]:
        """The completions of a batch that a killed life of ``parser`` logged ready at ``since``
        (:meth:`completion_mark`; parse/settle.py). Their leases gone are not stale when that life's call for them
        ran (its watermark at or past ``since``): nothing is stored twice."""
        recent = self._recent
        if recent is None or recent.name != parser:  # the node's start: no parser life of its own
            recent = RecentCompletions(parser, resend=False)
        recent.begin()
        answers = self._run(self.core.complete(completions, recent=recent, redo_since=since))
        self._send_lost()
        return answers

    def keep_completions(self, name: str, resend: bool = True) -> None:
        """A parser's completion calls move its watermark (resend.py; ``name`` is the parser's, the same in its
        next life), so that one sent again after its reply was lost is not taken for stale. ``resend`` (a Redis with
        replicas): they are also kept a while and sent again if a failover lost them."""
        self._recent = RecentCompletions(name, resend=resend)

    def check_completions(self) -> None:
        """Once a second at most (an idle parser's loop, and after each completion call): whether a failover
        lost completions this parser made on a shard it has not called since, and if so they are sent again."""
        if self._recent is None or not (shards := self._recent.shards_to_check()):
            return
        # an idle parser must go on polling, and see the node stop: asked again in a second if Redis is away
        if self._once(self.core.watermarks(shards, self._recent), False):
            self._send_lost()

    def _once(self, steps: Steps[T], away: T) -> T:
        """One try, not waiting out an outage: ``away`` if Redis does not answer."""
        try:
            return _drive(self.client, steps)
        except Exception as exc:
            if not is_transient(exc):
                raise
            return away

    def _send_lost(self) -> None:
        if self._recent is None:
            return
        lost, links = self._recent.take_lost()
        if links:  # before their pages' completions: a page completed is one whose links are in
            added = self._run(self.core.add(links, self.replicas, again=True)).added
            log.warning("Redis lost links this parser had added (a failover?): %d of %d added again", added, len(links))
        if not lost:
            return
        self._recent.begin()
        answers = self._run(self.core.complete(lost, again=True, recent=self._recent))
        done = answers.count(None)
        level = logging.WARNING if done else logging.INFO
        log.log(
            level,
            "Redis lost this parser's last completion calls (a failover?): sent %d completion(s) again, "
            "%d of them were missing",
            len(lost),
            done,
        )

    def reclaim_expired(self) -> int:
        return self._run(self.core.reclaim("expired"))

    def reclaim_owner(self, owner_prefix: str) -> int:
        return self._run(self.core.reclaim("owner", owner_prefix))

    def reclaim_tokens(self, leases: Sequence[tuple[int, str]]) -> int:
        return self._run(self.core.reclaim_tokens(leases))

    def counters(self) -> Counters:
        return self._run(self.core.counters())

    def is_finished(self) -> bool:
        return self._run(self.core.is_finished())

    def request_stop(self) -> None:
        """Every node of the crawl drains and exits, as on ``trawl stop`` (a spider's CloseSpider)."""
        self._run(self.core.request_stop())

    def finished_now(self) -> bool:
        """:meth:`is_finished`, asked once (False if Redis does not answer): for a process that is ending."""
        return self._once(self.core.is_finished(), False)

    def count(self, counters: dict[str, int]) -> None:
        self._run(self.core.count(counters))

    def requeue_failed(
        self, reasons: Sequence[str] = (), origins: set[str] | None = None, others: Counter[str] | None = None
    ) -> int:
        return self._run(self.core.requeue_failed(reasons, origins, others))

    def requeue_due(self) -> int:
        return self._run(self.core.requeue_due())

    def recrawl_hints(self, hints: Sequence[RecrawlHint]) -> int:
        return self._run(self.core.recrawl_hints(hints))

    def recrawl_state(self, shard: int, url: str) -> str:
        return self._run(self.core.recrawl_state(shard, url))

    def give_up(self, shard: int, host: str, owner: str, limit: int = GIVE_UP_CHUNK, origin: str = "") -> GivenUp:
        return self._run(self.core.give_up(shard, host, owner, limit, origin))

    def take_address(self, address: str, token: str, hold_ms: int) -> int:
        return self._run(self.core.gate("take", address, token, hold_ms))

    def free_address(self, address: str, token: str, gap_ms: int) -> None:
        self._run(self.core.gate("free", address, token, gap_ms))

    def get_robots(self, origin: str) -> bytes | None:
        return self._run(self.core.get_robots(origin))

    def set_robots(self, origin: str, value: bytes, ttl_s: float) -> None:
        self._run(self.core.set_robots(origin, value, ttl_s))

    def robots_states(self, origins: Sequence[str]) -> list[bytes | None]:
        return self._run(self.core.robots_states(origins))

    def forget_robots(self, origins: Sequence[str]) -> None:
        self._run(self.core.forget_robots(origins))

    def add_seed_hosts(self, items: Iterable[str]) -> int:
        return self._run(self.core.add_seed_hosts(items))

    def seed_hosts(self) -> set[str]:
        return self._run(self.core.seed_hosts())
