"""Which shards ``lease()`` asks, so a fetcher neither scans 64 empty shards per call nor spins on an empty frontier.

Each lease script returns its shard's clock and the score of its earliest ready host. From that the planner keeps,
per shard, the local (monotonic) time at which asking again is worth a round trip. Work added by *other* processes
is invisible here, so a shard never rests longer than ``empty_poll`` seconds. Shards known to have ready hosts right
now ("hot": a full answer, or our own add/release) are asked first.

Many processes on many nodes lease from one frontier: each starts its sweep at its own shard (``start``), so they
do not all queue up on the same few shards (and the same cluster master) first. The rest of an empty shard is at
least ``shards / IDLE_ASKS_PER_S`` seconds, so an idle process asks at most that many empty shards per second
whatever the shard count (with 64 shards this floor is below the default ``empty_poll``; 0 turns resting off).
"""

from __future__ import annotations

from collections.abc import Collection

IDLE_ASKS_PER_S = 1000.0


class LeasePlanner:
    def __init__(self, shards: int, per_call: int, empty_poll_s: float, start: int = 0) -> None:
        self._due = [0.0] * shards
        self._hot: set[int] = set()
        self._per_call = max(1, per_call)
        self._empty_poll = max(0.0, empty_poll_s)
        if self._empty_poll > 0:
            self._empty_poll = max(self._empty_poll, shards / IDLE_ASKS_PER_S)
        self._shards = shards
        self._start = start % shards if shards else 0

    def pick(self, max_hosts: int, now: float, exclude: Collection[int] = ()) -> list[tuple[int, int]]:
        """Up to ``per_call`` due shards with how many hosts to ask each (summing to at most ``max_hosts``)."""
        if max_hosts <= 0:
            return []
        due = [s for s, t in enumerate(self._due) if t <= now and s not in exclude]
        if not due:
            return []
        n, start = self._shards, self._start
        due.sort(key=lambda s: (s not in self._hot, self._due[s], (s - start) % n))
        chosen = due[: min(len(due), max_hosts, self._per_call)]
        base, extra = divmod(max_hosts, len(chosen))
        return [(s, base + (1 if i < extra else 0)) for i, s in enumerate(chosen)]

    def observe(self, shard: int, asked: int, got: int, server_now: int, earliest: int, now: float) -> None:
        """Learn from a lease answer: ``earliest`` is the shard's first ready score (-1: no host waiting)."""
        if got >= asked and earliest >= 0 and earliest <= server_now:
            self._hot.add(shard)
            self._due[shard] = now
            return
        self._hot.discard(shard)
        wait = self._empty_poll
        if earliest >= 0:
            wait = min(wait, max(0.0, (earliest - server_now) / 1000.0))
        self._due[shard] = now + wait

    def hint(self, shard: int, ready_at: float) -> None:
        """This process made a host of ``shard`` ready at local time ``ready_at`` (add, release)."""
        if ready_at < self._due[shard]:
            self._due[shard] = ready_at
        self._hot.add(shard)

    def next_due(self, now: float) -> float:
        """Seconds until some shard is worth asking (0: now)."""
        return max(0.0, min(self._due) - now)
