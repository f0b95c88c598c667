"""Fill the frontier with URLs that are never leased, to show the cost per page does not grow with its size.

The URLs go in through the normal ``add`` path (Bloom filter, host queues, counters), on hosts
``preload<i>.test`` that are then pushed far into the future in their shard's ready set: they stay queued and
take memory, index and Bloom bits like a real backlog, but no fetcher ever gets one (so no request leaves for
them, even though ``*.test`` resolves to the test web).
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import redis

from webtrawl.frontier import RedisFrontier
from webtrawl.frontier.keys import ready_key, shard_tag
from webtrawl.messages import NewUrl
from webtrawl.names import PRIORITY_LEVELS

_FAR_MS = 10**13  # year 2286: a host whose next-allowed time is this is never ready
_WORDS = tuple(
    [
        "news",
        "world",
        "article",
        "index",
        "page",
        "blog",
        "post",
        "category",
        "archive",
        "review",
        "story",
        "sport",
        "business",
        "tech",
        "science",
        "health",
        "travel",
        "food",
        "culture",
        "opinion",
        "video",
        "photo",
        "gallery",
        "local",
        "weather",
        "market",
        "money",
        "politics",
        "music",
        "film",
    ]
)


def preload_host(i: int) -> str:
    return f"preload{i}.test"


def _urls(total: int, per_host: int, seed: int) -> Iterator[list[NewUrl]]:
    """Batches of 1,000 page-like URLs (40-70 character paths), ``per_host`` URLs per host."""
    rng = random.Random(seed)
    batch: list[NewUrl] = []
    for n in range(total):
        host = preload_host(n // per_host)
        words = "-".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 7)))
        path = f"/{rng.choice(_WORDS)}/{rng.randint(2000, 2025)}/{words}-{n}"[:70]
        batch.append(NewUrl(f"https://{host}{path}", depth=3))
        if len(batch) >= 1000:
            yield batch
            batch = []
    if batch:
        yield batch


def preload(client: redis.Redis, frontier: RedisFrontier, total: int, per_host: int = 100) -> tuple[int, float]:
    """Add ``total`` never-ready URLs; returns (URLs added, seconds taken)."""
    started = time.perf_counter()
    added = 0
    for batch in _urls(total, per_host, seed=total):
        added += frontier.add(batch).added
    hosts = (total + per_host - 1) // per_host
    prefix = frontier.core.settings.prefix
    pipe = client.pipeline(transaction=False)
    for i in range(hosts):
        host = preload_host(i)
        sp = shard_tag(prefix, frontier.shard_of(host))
        pipe.hset(sp + "h:" + host, "n", _FAR_MS)
        for level in range(PRIORITY_LEVELS):
            pipe.zadd(ready_key(sp, level), {host: _FAR_MS}, xx=True)
        if len(pipe) >= 2000:
            pipe.execute()
    pipe.execute()
    return added, time.perf_counter() - started
