"""The frontier's small typed interface, independent of Redis.

Life of a URL: ``add`` (dedup, caps) -> queued -> ``lease`` (host and URL leased together; one request per host in
flight) -> ``release`` (the fetch is over: the host gets its next-allowed time, the URL either moves on to the
parsers still leased, or goes back to its queue) -> ``complete`` (the parser stored the record and added the links:
the lease is dropped). A lease that is never released or completed expires and its URL returns to the head of its
host's queue, so a killed process loses nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import msgspec

from webtrawl.messages import Completion, Lease, NewUrl
from webtrawl.names import INFLIGHT, QUEUED

if TYPE_CHECKING:
    from webtrawl.frontier.bloom import BloomLevel


class UrlAction(enum.IntEnum):
    """What ``release`` does with the leased URL."""

    KEEP = 0  # fetched: the URL stays leased (owner: the parser pool, deadline: process_ttl) until complete()
    HEAD = 1  # not fetched (e.g. robots.txt had to be fetched first): back to the head of the queue, unchanged
    RETRY = 2  # transient failure: back to the tail of the queue with retries + 1


class Release(msgspec.Struct, frozen=True):
    """End of a fetch, from the host's point of view."""

    token: str
    shard: int
    host: str
    action: UrlAction = UrlAction.KEEP
    delay_ms: int = 1000  # politeness gap from now (delay or Crawl-delay) after a normal answer
    failed: bool = False  # 429 / 503 / network error: host failure count + 1, exponential back-off
    retry_after_ms: int = 0  # server's Retry-After, already capped; used instead of back-off when > 0
    counters: dict[str, int] = msgspec.field(default_factory=dict)
    hold: bool = False  # host session: lease the host's next URL to the same owner, due at its next-allowed time
    robots_wait: bool = False  # the URL waits for a robots.txt retry (delay_ms): the progress line says so


class Held(msgspec.Struct, frozen=True):
    """The next lease of a held host (see ``Release.hold``): fetch it no sooner than ``wait_ms`` from now."""

    lease: Lease
    wait_ms: int


class Parked(msgspec.Struct, frozen=True):
    """The answer to a failed release that parked its host (``--park-after``): its URL was kept for the parsers (a
    RETRY too: its retries end here) and the host's queued URLs are to be given up (``give_up``), not requested."""

    failures: int  # the host's failures in a row


class Stale:
    """A release or completion that came too late: its lease had expired and was taken back (the fetcher was cut off
    from Redis for longer than --lease-ttl, or the parser held the page past --process-ttl), so the URL belongs to
    another fetch now. The fetcher drops the page: its record would be written a second time by whoever fetches the
    URL now (self-fencing); the completion is discarded, not written over that fetch's work."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "STALE"


STALE = Stale()
ReleaseAnswer = Held | Stale | Parked | None  # what a release answers (see FrontierCore.release)


class AddResult(msgspec.Struct):
    added: int = 0
    seen: int = 0  # already seen (Bloom filter)
    dropped: dict[str, int] = msgspec.field(default_factory=dict)  # reason -> count (host-queue-cap, budget...)
    refused: list[tuple[str, str]] = msgspec.field(default_factory=list)  # (url, reason) of each dropped URL
    acknowledged: bool = True  # False: a master the URLs went to did not confirm them on its replicas (replicas.py)


class Counters(msgspec.Struct):
    """Counters summed over all shards (each an O(1) HGETALL per shard)."""

    values: dict[str, int] = msgspec.field(default_factory=dict)
    ready_hosts: int = 0
    waiting_hosts: int = 0
    bloom_bits: int = 0  # bitmaps in use over all shards
    bloom_hashes: int = 0
    bloom_chain: list[tuple[int, ...]] = msgspec.field(default_factory=list)  # bloom.BloomLevel of each filter
    bloom_fill: list[tuple[int, int]] = msgspec.field(default_factory=list)  # per shard: newest filter, its URLs
    # hosts waiting beyond their politeness gap, and the ms until the first of each kind is due (-1: none)
    backoff_hosts: int = 0
    backoff_next_ms: int = -1
    robots_hosts: int = 0
    robots_next_ms: int = -1
    next_due_ms: int = -1  # the first of all waiting hosts

    def get(self, name: str) -> int:
        return self.values.get(name, 0)

    @property
    def queued(self) -> int:
        return self.get(QUEUED)

    @property
    def inflight(self) -> int:
        return self.get(INFLIGHT)

    @property
    def bloom_filters(self) -> int:
        """Filters in the longest chain of the seen filter (1 until a shard took more than ``--expected-urls``
        allotted it): a new URL is tested against each."""
        return max((newest + 1 for newest, _ in self.bloom_fill), default=1)

    def bloom_levels(self) -> list[BloomLevel] | None:
        """The seen filter's levels when their own rates apply (a chain per shard, or blocked filters), else None:
        one plain bitmap per shard (an older crawl), whose rate follows from the URLs added and its size."""
        from webtrawl.frontier.bloom import BloomLevel

        chain = [BloomLevel(*level) for level in self.bloom_chain]
        if self.bloom_fill and (len(chain) > 1 or any(level.blocked for level in chain)):
            return chain
        return None

    def bloom_false_positive_rate(self) -> float:
        """Current false-positive probability of the seen filter: a new URL lands in a shard at random, and meets
        that shard's chain's compound rate (bloom.py); one bitmap per shard (an older crawl): (1 - e^(-k n / m))^k
        with the URLs spread evenly."""
        import math

        from webtrawl.frontier.bloom import chain_false_positive_rate

        chain = self.bloom_levels()
        if chain is not None:
            rates = [chain_false_positive_rate(chain, newest, n) for newest, n in self.bloom_fill]
            return sum(rates) / len(rates)
        n, m, k = self.get("added"), self.bloom_bits, self.bloom_hashes
        if not m or not k:
            return 0.0
        return float((1.0 - math.exp(-k * n / m)) ** k)


class Frontier(Protocol):
    """Synchronous frontier API (parsers, supervisor, tests). The async twin has the same methods as coroutines."""

    def add(self, urls: Sequence[NewUrl]) -> AddResult: ...

    def lease(self, owner: str, max_hosts: int) -> list[Lease]: ...

    def release(self, releases: Sequence[Release]) -> list[Held | Stale | Parked | None]: ...

    def complete(self, completions: Sequence[Completion]) -> list[Stale | None]: ...

    def reclaim_expired(self) -> int: ...

    def reclaim_owner(self, owner_prefix: str) -> int: ...

    def counters(self) -> Counters: ...

    def is_finished(self) -> bool: ...

    def get_robots(self, origin: str) -> bytes | None: ...

    def set_robots(self, origin: str, value: bytes, ttl_s: float) -> None: ...
