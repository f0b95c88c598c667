"""``trawl stats``: the counters of a crawl, live or stopped.

``bytes-per-queued-url`` is Redis memory without the seen filter (allocated at full size when the crawl is created)
divided by the queued URLs.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from webtrawl.errors import InputError
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.metrics import format_stats
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl.node.supervisor import redis_used_memory


@contextlib.contextmanager
def _redis_for(out: Path, redis_url: str | None) -> Iterator[str]:
    """The running crawl's Redis if there is one, else the embedded server started just for reading."""
    if redis_url:
        yield redis_url
        return
    data_dir = out / "redis"
    if not data_dir.is_dir():
        raise InputError(f"{out} holds no crawl (no {data_dir})")
    running = EmbeddedRedis.running_url(data_dir)
    if running:
        yield running
        return
    server = EmbeddedRedis(data_dir)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def print_stats(out: Path, redis_url: str | None, *, as_json: bool = False) -> int:
    with _redis_for(out, redis_url) as url:
        client = connect_sync(url)
        frontier = RedisFrontier.open(client, FrontierSettings(), create=False)
        counters = frontier.counters()
        meta: dict[str, Any] = dict(frontier.meta())
        if str(meta.get("created", "")).isdigit():
            meta["created"] = datetime.fromtimestamp(int(meta["created"]), UTC).isoformat(timespec="seconds")
        used = redis_used_memory(client)
        meta["redis_used_memory"] = used
        if counters.queued:
            # The seen filter is allocated at full size when the crawl is created; leave it out of the per-URL cost.
            bloom_bytes = counters.bloom_bits // 8
            meta["bytes_per_queued_url"] = max(0, used - bloom_bytes) / counters.queued
    if as_json:
        doc = {
            "counters": counters.values,
            "ready_hosts": counters.ready_hosts,
            "waiting_hosts": counters.waiting_hosts,
            "bloom_false_positive_rate": counters.bloom_false_positive_rate(),
            "meta": meta,
        }
        print(json.dumps(doc, indent=1, sort_keys=True, default=str))
    else:
        print(format_stats(counters, meta))
    return 0
