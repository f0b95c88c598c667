"""Hand-built counters and snapshots shaped like the ones a running crawl produces."""

from __future__ import annotations

from webtrawl.frontier.base import Counters
from webtrawl.metrics import Snapshot

MIB = 1024 * 1024


def crawl_counters(fetched: int = 1234, **more: int) -> Counters:
    values = {
        "fetched": fetched,
        "pages": 1200,
        "stored": 1100,
        "queued": 50,
        "inflight": 3,
        "added": 2000,
        "seen": 500,
        "hosts": 40,
        "hosts-parked": 2,
        "err:http-5xx": 7,
        "err:timeout": 3,
        "err:dns": 1,
        "err:robots": 4,
        "drop:host-queue-cap": 10,
        "drop:budget": 2,
        "drop:scope": 0,
        "custom-thing": 5,
    }
    values.update(more)
    return Counters(
        values=values, ready_hosts=4, waiting_hosts=9, bloom_bits=20000, bloom_hashes=7, backoff_hosts=2, robots_hosts=1
    )


def snapshot(at: float, fetched: int = 1234, **more: int) -> Snapshot:
    return Snapshot(
        at=at,
        counters=crawl_counters(fetched, **more),
        rss_by_kind={"fetcher": 300 * MIB, "parser": 200 * MIB, "supervisor": 12 * MIB},
        redis_used_memory=5_000_000,
        extra={"node": "n1", "state": "crawling", "elapsed": 3723.0},
    )
