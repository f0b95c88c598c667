"""All frontier logic that is not Redis I/O, shared by the sync and the async frontier.

Each operation is a generator: it yields a list of :class:`Call` (one pipeline), receives the replies and finally
returns the decoded result. :class:`RedisFrontier` and :class:`AsyncRedisFrontier` only drive these generators with
a sync or an async pipeline, so the two cannot drift apart.
"""

from __future__ import annotations

import itertools
import random
import secrets
import time
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from webtrawl.domains import registered_domain
from webtrawl.frontier.adding import AddBatch, Segment
from webtrawl.frontier.base import STALE, AddResult, Counters, Held, Parked, Release, Stale
from webtrawl.frontier.bloom import BloomLevel, chain_spec, parse_chain
from webtrawl.frontier.giveup import GiveUps
from webtrawl.frontier.keys import (
    decode_entry,
    lease_of,
    ready_channel,
    seeds_key,
    shard_of,
    shard_tag,
    split_url,
    stop_key,
    text,
)
from webtrawl.frontier.planner import LeasePlanner
from webtrawl.frontier.recent import RecentUrls
from webtrawl.frontier.replicas import NodeOf, acknowledged, one_server, replicated
from webtrawl.frontier.resend import WATERMARKS, RecentCompletions
from webtrawl.frontier.robotsstate import RobotsStates
from webtrawl.frontier.scripts import Arg, Call, Steps, T, load_calls, script_call
from webtrawl.frontier.settings import FrontierSettings
from webtrawl.frontier.upkeep import Upkeep
from webtrawl.messages import Completion, Lease, NewUrl, RecrawlHint
from webtrawl.names import INFLIGHT, QUEUED

_QUEUED_REFRESH_S = 1.0


def pairs(flat: Sequence[Any]) -> dict[str, str]:
    if isinstance(flat, dict):
        return {text(k): text(v) for k, v in flat.items()}
    return {text(flat[i]): text(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}


def _counter_args(counters: dict[str, int]) -> list[Arg]:
    out: list[Arg] = [len(counters)]
    for name, value in counters.items():
        out += [name, int(value)]
    return out


class FrontierCore(Upkeep, GiveUps, RobotsStates):
    def __init__(self, settings: FrontierSettings, meta: dict[str, str], one_slot: bool = True) -> None:
        self.settings = settings
        self.one_slot = one_slot
        # the master a written key is on, for the replica barrier's one WAIT per master: a cluster frontier sets
        # its client's (replicas.node_of_cluster); until then, one per key
        self.node_of: NodeOf = str if one_slot else one_server
        self.meta: dict[str, str | int] = {k: int(v) if v.lstrip("-").isdigit() else v for k, v in meta.items()}
        self.shards = int(self.meta["shards"])
        self.bloom_m = int(self.meta["bloom_m"])
        self.bloom_k = int(self.meta["bloom_k"])
        spec = str(self.meta.get("bloom_chain", ""))  # absent: a crawl from before the chains, one bitmap per shard
        self.bloom_chain = parse_chain(spec) if spec else [BloomLevel(self.bloom_m, self.bloom_k, 0)]
        scheme = str(self.meta.get("bloom_scheme", "e" if spec else "d"))  # add.lua's: b blocked, older e, d (bloom.py)
        self.bloom_chain = [level._replace(blocked=int(scheme == "b")) for level in self.bloom_chain]
        self._bloom_args: list[Arg] = [chain_spec(self.bloom_chain), scheme]
        self._sp = [shard_tag(settings.prefix, s) for s in range(self.shards)]
        self._shard_of_sp = {sp.encode(): s for s, sp in enumerate(self._sp)}
        self._ready_channel = ready_channel(settings.prefix)
        self._rng = random.Random()
        self.planner = LeasePlanner(
            self.shards, settings.shards_per_lease, settings.empty_poll_ms / 1000.0, self._rng.randrange(self.shards)
        )
        self._queued_total = 0
        self._queued_at = float("-inf")
        self.recent = RecentUrls(settings.recent_urls)
        # a crawl created before the key existed is keyed by host
        self.politeness_key = str(self.meta.get("politeness_key", "host"))
        # request ids of lease calls: unique over the crawl's processes and their restarts (lease.lua)
        self._request_prefix = secrets.token_hex(6) + "-"
        self._requests = itertools.count(1)

    def key(self, host: str) -> str:
        """The queue (politeness) key of a host: the host itself, or its registered domain."""
        if self.politeness_key != "domain":
            return host
        return registered_domain(host)

    def shard(self, host: str) -> int:
        return shard_of(host, self.shards)

    # --- add ------------------------------------------------------------------------------------------------
    def add(self, urls: Sequence[NewUrl], replicas: int = 0, again: bool = False) -> Steps[AddResult]:
        """``replicas`` > 0: on that many replicas on return, or not ``acknowledged`` (replicas.py). ``again``: lost."""
        s = self.settings
        allowed = len(urls)
        if s.frontier_cap > 0:
            if time.monotonic() - self._queued_at >= _QUEUED_REFRESH_S:
                replies = yield [Call(("HGET", sp + "c", QUEUED)) for sp in self._sp]
                self._queued_total = sum(int(r or 0) for r in replies)
                self._queued_at = time.monotonic()
            allowed = max(0, s.frontier_cap - self._queued_total)
        recent = RecentUrls(0) if again else self.recent  # a failover lost them: not seen, whatever the cache says
        batch = AddBatch(self.shard, recent, allowed, self.key if self.politeness_key == "domain" else None)
        batch.extend(urls)
        calls = batch.calls(self.one_slot)
        if calls:
            adds = [self._add_call(segments) for segments in calls]
            replies, batch.result.acknowledged = yield from acknowledged(adds, replicas, self.node_of)
            now = time.monotonic()
            for segments, reply in zip(calls, replies, strict=True):
                for shard, wait_ms in batch.replies(segments, reply):
                    self.planner.hint(shard, now + wait_ms / 1000.0)
        result = batch.result
        self._queued_total += result.added
        result.dropped = {k: v for k, v in batch.dropped.items() if v}
        return result

    @property
    def ready_channel(self) -> str:
        """Where add.lua publishes its ready hints (keys.py); none on a cluster, which would need a sharded channel
        per slot: its fetchers poll."""
        return "" if self.one_slot else self._ready_channel

    def ready_hint(self, message: bytes) -> None:
        """What add.lua published on the ready channel: its shards are worth asking from now (or when due)."""
        parts = message.split(b"\n")
        now = time.monotonic()
        for sp, wait_ms in zip(parts[::2], parts[1::2], strict=False):
            shard = self._shard_of_sp.get(sp)
            if shard is not None and wait_ms.isdigit():  # anything else is not add.lua's: a hint can be ignored
                self.planner.hint(shard, now + int(wait_ms) / 1000.0)

    def _add_call(self, segments: list[Segment]) -> Call:
        s = self.settings
        args: list[Arg] = [*self._bloom_args, s.host_queue_cap, s.host_budget, self.ready_channel]
        for seg in segments:
            args += seg.args(self._sp[seg.shard])
        return script_call("add", self._sp[segments[0].shard] + "c", *args)

    # --- lease ----------------------------------------------------------------------------------------------
    def lease(self, owner: str, max_hosts: int, replicas: int = 0) -> Steps[list[Lease]]:
        """``replicas`` > 0: the leases are on that many replicas when this returns, so that a failover cannot give
        a host a fetcher is fetching to another one (replicas.py)."""
        if not owner or " " in owner:
            raise ValueError(f"lease owner must be a non-empty word like 'node/f0', not {owner!r}")
        leases: list[Lease] = []
        done: set[int] = set()  # shards that had no more to give in this call
        while len(leases) < max_hosts:
            plan = self.planner.pick(max_hosts - len(leases), time.monotonic(), done)
            if not plan:
                break
            # one id per round, in the call's arguments: a call sent again after a lost reply carries the same one
            request = f"{self._request_prefix}{next(self._requests)}"
            calls = [
                script_call(
                    "lease", self._sp[shard] + "ready", self._sp[shard], shard, owner, n, self._lease_ttl(), request
                )
                for shard, n in plan
            ]
            replies = yield from replicated(calls, replicas, self.node_of)
            now = time.monotonic()
            for (shard, asked), reply in zip(plan, replies, strict=True):
                got = (len(reply) - 2) // 5
                self.planner.observe(shard, asked, got, int(reply[0]), int(reply[1]), now)
                if got < asked:
                    done.add(shard)
                for i in range(2, len(reply), 5):
                    host = text(reply[i + 1])
                    entry = decode_entry(text(reply[i + 3]), text(reply[i + 2]))
                    render = bool(text(reply[i + 4]))
                    leases.append(lease_of(text(reply[i]), shard, host, entry, render))
        return leases

    def mark_render(self, host: str) -> Steps[None]:
        """Remember that ``host`` serves script-built pages: its next leases say ``render`` (``--render auto``)."""
        yield [Call(("HSET", self._sp[self.shard(host)] + "h:" + host, "js", "1"))]

    def _lease_ttl(self) -> int:
        return max(0, self.settings.lease_ttl_ms)

    def next_lease_in(self) -> float:
        return self.planner.next_due(time.monotonic())

    # --- release / complete ---------------------------------------------------------------------------------
    def release(self, releases: Sequence[Release], replicas: int = 0) -> Steps[list[Held | Stale | Parked | None]]:
        """Per release, the host's next lease if it asked to hold the host (a session) and one was due, STALE if
        its lease had been taken back meanwhile, Parked if its failure parked the host, else None. ``replicas``: as
        for :meth:`lease` (a held lease)."""
        s = self.settings
        groups: dict[int, list[Arg]] = defaultdict(list)
        members: dict[int, list[int]] = defaultdict(list)  # shard -> indexes into releases, in call order
        for index, r in enumerate(releases):
            jitter = 1000
            if r.failed and s.backoff_jitter:
                jitter = round(1000 * (1.0 + self._rng.uniform(-s.backoff_jitter, s.backoff_jitter)))
            groups[r.shard] += [
                r.token, int(r.action), max(0, r.delay_ms), _why(r), max(0, r.retry_after_ms), jitter,
                int(r.hold), *_counter_args(r.counters),
            ]  # fmt: skip
            members[r.shard].append(index)
        held: list[Held | Stale | Parked | None] = [None] * len(releases)
        if not groups:
            return held
        shards = sorted(groups)
        header = (s.backoff_base_ms, s.backoff_max_ms, s.park_after, s.process_ttl_ms, self._lease_ttl())
        calls = [script_call("release", self._sp[sh] + "L", self._sp[sh], *header, *groups[sh]) for sh in shards]
        replies = yield from replicated(calls, replicas, self.node_of)
        now = time.monotonic()
        for shard, reply in zip(shards, replies, strict=True):
            flat = reply[1] if isinstance(reply, list | tuple) and len(reply) > 1 else []
            for i in range(0, len(flat), 5):
                index = members[shard][int(flat[i]) - 1]
                entry = decode_entry(text(flat[i + 3]), text(flat[i + 2]))
                lease = lease_of(text(flat[i + 1]), shard, releases[index].host, entry)
                held[index] = Held(lease, max(0, int(flat[i + 4])))
            for i in reply[2] if isinstance(reply, list | tuple) and len(reply) > 2 else []:
                held[members[shard][int(i) - 1]] = STALE
            parked = reply[3] if isinstance(reply, list | tuple) and len(reply) > 3 else []
            for i in range(0, len(parked), 2):
                held[members[shard][int(parked[i]) - 1]] = Parked(int(parked[i + 1]))
        for r, h in zip(releases, held, strict=True):
            if not r.failed and h is None:
                self.planner.hint(r.shard, now + r.delay_ms / 1000.0)
        return held

    def complete(
        self,
        completions: Sequence[Completion],
        again: bool = False,
        recent: RecentCompletions | None = None,
        redo_since: int = 0,
    ) -> Steps[list[Stale | None]]:
        """Per completion, STALE if it was discarded (its lease had been taken back: see complete.lua), else None.
        ``again``: completions a failover lost. ``recent``: the parser's record of its calls, given the watermark
        each found (resend.py). ``redo_since``: a batch its killed life logged ready then (parse/settle.py)."""
        groups: dict[int, list[Arg]] = defaultdict(list)
        members: dict[int, list[int]] = defaultdict(list)  # shard -> indexes into completions, in call order
        for index, c in enumerate(completions):
            recrawl = (c.url, c.recrawl, c.due_ms) if c.recrawl else ("", "", 0)
            groups[c.shard] += [c.token, *_counter_args(c.counters), *recrawl, c.failed]
            members[c.shard].append(index)
        done: list[Stale | None] = [None] * len(completions)
        calls = self._per_call(sorted(groups))  # a call costs a script run and an HINCRBY per counter
        sign = -1 if again else 1
        marks = [self._watermark(call, recent, redo_since) for call in calls]
        args = [[a for sh in call for a in (self._sp[sh], sign * len(members[sh]), *groups[sh])] for call in calls]
        gap = self.settings.host_gap_ms
        replies = yield [
            script_call("complete", self._sp[c[0]] + "L", gap, *m, *a)
            for c, m, a in zip(calls, marks, args, strict=True)
        ]
        for call, mark, (found, stale) in zip(calls, marks, replies, strict=True):
            order = [index for sh in call for index in members[sh]]
            for i in stale:
                done[order[int(i) - 1]] = STALE
            if recent is not None:
                shard = self._mark_shard(call)
                recent.answered(shard, int(mark[2]), [completions[i] for i in order], int(found) if found else None)
        return done

    def _mark_shard(self, call: Sequence[int]) -> int:
        """Where a completion call's watermark lives: its shard on a cluster, shard 0 on a plain Redis."""
        return call[0] if self.one_slot else 0

    def _watermark(
        self, call: Sequence[int], recent: RecentCompletions | None, redo_since: int
    ) -> tuple[str, str, int, str, str]:
        if recent is None:
            return ("", "", 0, "", "")
        shard = self._mark_shard(call)
        since = str(redo_since) if redo_since else ""
        return (self._sp[shard] + WATERMARKS, recent.name, recent.next_seq(), recent.expected(shard), since)

    def watermarks(self, shards: Sequence[int], recent: RecentCompletions) -> Steps[bool]:
        """A parser's read of its completion watermarks (resend.py); True once read."""
        replies = yield [Call(("HGET", self._sp[sh] + WATERMARKS, recent.name)) for sh in shards]
        for shard, found in zip(shards, replies, strict=True):
            recent.checked(shard, int(found) if found else None)
        return True

    def _per_call(self, items: Sequence[T]) -> list[list[T]]:
        """Per-shard work as script calls: one shard a call on a cluster (a call stays in one slot), all in one call
        on a plain Redis."""
        if self.one_slot:
            return [[item] for item in items]
        return [list(items)] if items else []

    # --- recrawl (--recrawl-after) ------------------------------------------------------------------------
    def recrawl_hints(self, hints: Sequence[RecrawlHint]) -> Steps[int]:
        """A sitemap's lastmod/changefreq for its URLs (see scripts/hint.lua); returns how many it queued again."""
        groups: dict[int, list[Arg]] = defaultdict(list)
        for h in hints:
            parts = split_url(h.url)
            if parts is not None:
                groups[self.shard(self.key(parts.host))] += [h.url, max(0, h.interval_ms), h.modified]
        if not groups:
            return 0
        shards = sorted(groups)
        replies = yield [script_call("hint", self._sp[sh] + "rc", self._sp[sh], *groups[sh]) for sh in shards]
        return sum(int(r) for r in replies)

    def recrawl_state(self, shard: int, url: str) -> Steps[str]:
        (state,) = yield from self.recrawl_states(shard, [url])
        return state

    def recrawl_states(self, shard: int, urls: Sequence[str]) -> Steps[list[str]]:
        """The URLs' states in the recrawl set ("" if none), in one pipeline (a given-up host's pages keep theirs)."""
        if not urls:
            return []
        values = yield [Call(("HGET", self._sp[shard] + "rc", url)) for url in urls]
        return [text(v) if v is not None else "" for v in values]

    # --- address gates (--politeness-key ip) ---------------------------------------------------------------
    def gate(self, op: str, address: str, token: str, ms: int) -> Steps[int]:
        """``take``: 0 if ``token`` now holds the address, else ms until it may be free; ``free``: start its gap."""
        key = self._sp[self.shard(address)] + "a:" + address
        (reply,) = yield [script_call("gate", key, op, token, max(0, ms))]
        return int(reply)

    # --- reading --------------------------------------------------------------------------------------------
    def counters(self) -> Steps[Counters]:
        calls = self._per_call(self._sp)
        replies = yield [script_call("stats", call[0] + "c", *call) for call in calls]
        out = Counters(bloom_hashes=self.bloom_k, bloom_chain=[tuple(lv) for lv in self.bloom_chain])
        values: dict[str, int] = defaultdict(int)
        for reply in (shard for call in replies for shard in call):
            out.ready_hosts += int(reply[0])
            out.waiting_hosts += int(reply[1])
            out.backoff_hosts += int(reply[2])
            out.backoff_next_ms = _sooner(out.backoff_next_ms, int(reply[3]))
            out.robots_hosts += int(reply[4])
            out.robots_next_ms = _sooner(out.robots_next_ms, int(reply[5]))
            out.next_due_ms = _sooner(out.next_due_ms, int(reply[6]))
            newest = min(int(reply[7]), len(self.bloom_chain) - 1)
            out.bloom_fill.append((newest, int(reply[8])))
            out.bloom_bits += sum(level.bits for level in self.bloom_chain[: newest + 1])
            for name, value in pairs(reply[9:]).items():
                values[name] += int(value)
        out.values = dict(values)
        return out

    def is_finished(self) -> Steps[bool]:
        """Nothing queued or in flight; StateError if the crawl is gone from Redis (:meth:`check_kept`): an
        emptied Redis has an empty frontier, and that is not a finished crawl."""
        kept = self.kept_calls()
        replies = yield [*kept, *(Call(("HMGET", sp + "c", QUEUED, INFLIGHT)) for sp in self._sp)]
        self.check_kept(replies[: len(kept)])
        replies = replies[len(kept) :]
        # sums: an add call on a plain Redis counts the URLs of all its shards in one shard's counters
        return sum(int(q or 0) for q, _ in replies) == 0 and sum(int(f or 0) for _, f in replies) == 0

    def request_stop(self) -> Steps[None]:
        yield [Call(("INCR", stop_key(self.settings.prefix)))]

    def add_seed_hosts(self, items: Iterable[str]) -> Steps[int]:
        values = list(items)
        if not values:
            return 0
        (added,) = yield [Call(("SADD", seeds_key(self.settings.prefix), *values))]
        return int(added)

    def seed_hosts(self) -> Steps[set[str]]:
        (members,) = yield [Call(("SMEMBERS", seeds_key(self.settings.prefix)))]
        return {text(m) for m in members}


def _why(release: Release) -> str:
    """release.lua's ``failed`` argument: a failure (back-off), a wait for a robots.txt retry, or neither."""
    return "1" if release.failed else "r" if release.robots_wait else "0"


def _sooner(a: int, b: int) -> int:
    """The earlier of two waits in ms, -1 meaning none."""
    return b if a < 0 or 0 <= b < a else a


def first_error(replies: Sequence[Any]) -> None:
    for reply in replies:
        if isinstance(reply, Exception):
            raise reply


__all__ = ["FrontierCore", "Steps", "first_error", "load_calls", "pairs"]
