"""The frontier's upkeep, beside :class:`~webtrawl.frontier.commands.FrontierCore` (which it is a part of): leases
taken back (expired, of a dead owner, or the pages a dead parser held) and recrawl rounds started. Generators of
script calls like the rest of the core (see commands.py)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from webtrawl.errors import StateError
from webtrawl.frontier.keys import SHARD_MARK, SHARD_MARKS, meta_key, text
from webtrawl.frontier.scripts import Call, Steps, script_call
from webtrawl.frontier.settings import FrontierSettings
from webtrawl.names import FAILED

_RECLAIM_BATCH = 1000


class Upkeep:
    settings: FrontierSettings
    shards: int
    meta: dict[str, str | int]  # the crawl's meta as this frontier opened it
    _sp: list[str]  # each shard's key prefix

    def kept_calls(self) -> list[Call]:
        """The calls whose replies :meth:`check_kept` reads (they ride in :meth:`FrontierCore.is_finished`'s round):
        the meta, and each shard's mark where the crawl has them."""
        calls = [Call(("HMGET", meta_key(self.settings.prefix), "shards", "stamp"))]
        if SHARD_MARKS in self.meta:
            calls += [Call(("EXISTS", sp + SHARD_MARK)) for sp in self._sp]
        return calls

    def check_kept(self, replies: Sequence[Any]) -> None:
        """StateError if the crawl's meta is gone from Redis, or is another crawl's, or a shard lost its mark: a Redis
        restarted without its data (no AOF) or flushed, or a cluster master restarted so, has an empty frontier or
        empty shards, which a node would take for a finished crawl or lose the URLs of in silence."""
        (shards, stamp), *marks = replies
        key = meta_key(self.settings.prefix)
        if shards is None or text(stamp or b"") != str(self.meta.get("stamp", "")):
            what = f"its meta ({key}) is missing" if shards is None else "its meta is another crawl's (created again)"
        elif not all(int(mark) for mark in marks):
            what = f"{sum(not int(mark) for mark in marks)} of its {len(marks)} shards are missing"
        else:
            return
        raise StateError(
            f"the crawl is gone from Redis: {what}; was Redis (or a cluster master) restarted without its data (no "
            "AOF) or flushed? Its queued URLs are lost: the node stopped (start the crawl again: trawl seed, then the "
            "nodes)"
        )

    # --- reclaim --------------------------------------------------------------------------------------------
    def reclaim(self, mode: str, owner_prefix: str = "") -> Steps[int]:
        """``expired``: leases past their deadline; ``owner``: every lease of an owner (and its sub-owners)."""
        if mode == "owner" and not owner_prefix:
            raise ValueError("reclaim_owner needs a non-empty owner prefix")
        total = 0
        shards = list(range(self.shards))
        while shards:
            calls = [
                script_call(
                    "reclaim",
                    self._sp[sh] + "dl",
                    self._sp[sh],
                    mode,
                    owner_prefix,
                    _RECLAIM_BATCH,
                    self.settings.host_gap_ms,
                )
                for sh in shards
            ]
            replies = yield calls
            total += sum(int(taken) for _, taken in replies)
            shards = [sh for sh, (looked, _) in zip(shards, replies, strict=True) if int(looked) >= _RECLAIM_BATCH]
        return total

    def reclaim_tokens(self, leases: Sequence[tuple[int, str]]) -> Steps[int]:
        """The (shard, token) leases of pages a dead parser held, those not completed meanwhile (reclaim.lua)."""
        by_shard: dict[int, list[str]] = defaultdict(list)
        for shard, token in leases:
            by_shard[shard].append(token)
        shards = sorted(by_shard)
        gap = self.settings.host_gap_ms
        calls = [
            script_call("reclaim", self._sp[sh] + "dl", self._sp[sh], "tokens", "", 0, gap, *by_shard[sh])
            for sh in shards
        ]
        replies = yield calls
        return sum(int(taken) for _, taken in replies)

    def count(self, counters: dict[str, int]) -> Steps[None]:
        """Counters of work done outside the scripts (seeds a node dropped), on the first shard (readers sum them)."""
        yield [Call(("HINCRBY", self._sp[0] + "c", name, n)) for name, n in counters.items() if n]

    def requeue_failed(
        self, reasons: Sequence[str] = (), origins: set[str] | None = None, others: Counter[str] | None = None
    ) -> Steps[int]:
        """``trawl requeue``: the URLs whose retries ran out (all, or those failed for one of ``reasons``) are
        queued again, past the seen filter, with fresh retries (requeue.lua); returns how many, adds their
        origins to ``origins`` and counts the reasons of the failed URLs left in ``others``."""
        total = 0
        wanted = ",".join(reasons)
        cursors = {sh: "0" for sh in range(self.shards)}
        while cursors:
            shards = sorted(cursors)
            keys = [self._sp[sh] + FAILED for sh in shards]
            calls = [
                script_call("requeue", key, self._sp[sh], cursors[sh], _RECLAIM_BATCH, wanted)
                for sh, key in zip(shards, keys, strict=True)
            ]
            replies = yield calls
            for sh, (cursor, queued, found, kept) in zip(shards, replies, strict=True):
                total += int(queued)
                if origins is not None:
                    origins.update(text(origin) for origin in found)
                if others is not None:
                    others.update({text(reason): int(n) for reason, n in zip(kept[::2], kept[1::2], strict=True)})
                cursors[sh] = cursor.decode() if isinstance(cursor, bytes) else str(cursor)
                if cursors[sh] == "0":
                    del cursors[sh]
        return total

    def requeue_due(self) -> Steps[int]:
        """Start a recrawl round: every URL of the recrawl set that is due goes back into its host's queue."""
        total = 0
        shards = list(range(self.shards))
        while shards:
            calls = [script_call("due", self._sp[sh] + "due", self._sp[sh], _RECLAIM_BATCH) for sh in shards]
            replies = yield calls
            total += sum(int(queued) for queued, _ in replies)
            shards = [sh for sh, (_, looked) in zip(shards, replies, strict=True) if int(looked) >= _RECLAIM_BATCH]
        return total
