"""Completions sent again when a failover lost them with the master's last writes.

Redis replicates asynchronously: a completion the master acknowledged just before it was killed -9 may never have
reached the replica promoted in its place. Its page then stays leased (until ``--process-ttl`` from its release, 10
minutes by default) and its host held, though it was stored. Whether that happened cannot be told from the
connection (redis-py reconnects a broken one by itself, and an idle parser meets no outage at all), so the parser
writes a watermark with each completion call, in the same script: ``SP pw`` field <parser> = the call's sequence
number. The next call there (or a read, once a second, of every shard it holds calls of: a busy parser may not
call that shard again for long) gets the stored value back: when it is not the number of the parser's last call
there, the calls after it were lost, and their completions, kept for :data:`WINDOW_S` seconds, are sent again. A
completion whose lease is gone changes nothing (complete.lua), so one sent twice is harmless.

The links a page added went to Redis before its completion, and the replica barrier (replicas.py) has them on the
replicas first, so a completion that survived a failover has its links. Unless the barrier fell short: a master
whose replica is gone or lagging (or was promoted in a planned Sentinel failover, the old master taking writes until
it is demoted, which discards them) is not waited for. The links of a call made then are kept with it, and added
again (past the process's cache of URLs seen) before its completions are sent again: a page completed on the
promoted master without its links would have lost them for good.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence

from webtrawl.messages import Completion, NewUrl

WATERMARKS = "pw"  # per shard, a hash: parser -> the number of its last completion call that found what it expected
_Call = tuple[float, int, Sequence[Completion], Sequence[NewUrl]]
WINDOW_S = 30.0  # far past the replication lag of a working replica (milliseconds): older calls are replicated
_IDLE_CHECK_S = 1.0  # a parser reads the watermarks of the shards it holds calls of this often


class RecentCompletions:
    """One parser's completion calls of the last :data:`WINDOW_S` seconds, by the shard that holds their
    watermark (the call's shard on a cluster, shard 0 on a plain Redis), and the ones found lost.

    A shard's calls are dropped only once its watermark was read (by a call there, or by :meth:`checked`) and found
    whole, :data:`WINDOW_S` after them: a shard this parser does not complete on again (a busy parser whose pages
    are on other hosts now, or a Redis away longer than the window) keeps them until its read says."""

    def __init__(self, name: str, window_s: float | None = None, resend: bool = True) -> None:
        self.name = name  # the watermark's field: the same in the parser's next life, which starts above it
        self.resend = resend  # False (no replicas, no failover): the watermark only, no call kept
        self.window_s = WINDOW_S if window_s is None else window_s
        self._seq = 0
        self._written: dict[int, int] = {}  # watermark shard -> the number of this life's last call there
        self._calls: dict[int, deque[_Call]] = {}  # shard -> (when, number, completions, links not on replicas)
        self._lost: list[Completion] = []
        self._lost_links: list[NewUrl] = []
        self.unsure: list[NewUrl] = []  # links added since the last completion call that no replica confirmed
        self._links: list[NewUrl] = []  # those of the completion being sent
        self._checked = time.monotonic()

    def next_seq(self) -> int:
        """A call's number: rising, and above any a previous life of the parser wrote (microseconds)."""
        self._seq = max(self._seq + 1, time.time_ns() // 1000)
        return self._seq

    def expected(self, shard: int) -> str:
        """The watermark a call at ``shard`` expects to find, which it then moves on ('' unknown: it just writes)."""
        last = self._written.get(shard)
        return "" if last is None else str(last)

    def begin(self) -> None:
        """A completion (one call, or one a shard) is sent: the links no replica confirmed since go with its calls."""
        self._links, self.unsure = self.unsure, []

    def answered(self, shard: int, seq: int, completions: Sequence[Completion], stored: int | None) -> None:
        """Call ``seq`` at ``shard`` was answered; ``stored`` is the watermark it found there (before its own)."""
        self._compare(shard, stored, seq)
        if self.resend:
            self._calls.setdefault(shard, deque()).append((time.monotonic(), seq, completions, self._links))

    def checked(self, shard: int, stored: int | None) -> None:
        """A read of the watermark at ``shard`` (:meth:`shards_to_check`)."""
        self._compare(shard, stored, None)

    def _compare(self, shard: int, stored: int | None, upto: int | None) -> None:
        """complete.lua moves the watermark only from the value expected, so ``stored`` is either that (or ``upto``:
        a call sent again after its reply was lost, which found it so the first time), or the last call that
        survived: every call after it was lost. Either way the calls there older than the window are done with."""
        last = self._written.get(shard)
        calls = self._calls.get(shard, deque())
        if last is None or stored == last or (upto is not None and stored == upto):
            if upto is not None:
                self._written[shard] = upto
        else:
            lost = [call for call in calls if (stored is None or call[1] > stored) and (upto is None or call[1] < upto)]
            self._lost += [c for call in lost for c in call[2]]
            self._lost_links += [url for call in lost for url in call[3]]
            if stored is None:
                del self._written[shard]
            else:
                self._written[shard] = stored
        now = time.monotonic()
        while calls and now - calls[0][0] > self.window_s:
            calls.popleft()
        if not calls:
            self._calls.pop(shard, None)

    def take_lost(self) -> tuple[list[Completion], list[NewUrl]]:
        """The completions to send again, and the links to add again first."""
        lost, self._lost = self._lost, []
        links, self._lost_links = self._lost_links, []
        return lost, links

    def shards_to_check(self) -> list[int]:
        """The watermark shards of the calls held, once a second; else none."""
        now = time.monotonic()
        if not self._calls or now - self._checked < _IDLE_CHECK_S:
            return []
        self._checked = now
        return sorted(self._calls)
