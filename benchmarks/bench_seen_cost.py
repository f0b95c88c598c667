"""Redis CPU per URL of add.lua: new URLs and seen ones, by how many hosts an add call's URLs span.

Each child opens a fresh crawl (64 shards, a node-sized seen filter: ``--expected-urls`` 10M) on a private
redis-server and adds 50,000 URLs in calls of 100 (as a parser's batch: 1, 10 or 100 hosts per call), then the
same URLs again from a second frontier client (another parser: its own recent set), so every one reaches Redis and
is seen there. Printed: the server's CPU (user + system of its process) per URL, in us. Rounds alternate between
this tree and ``--baseline REF`` (ABAB..., each a fresh process); medians::

    PYTHONPATH=src .venv/bin/python benchmarks/bench_seen_cost.py --rounds 5 --baseline main
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import psutil  # type: ignore[import-untyped]

_URLS, _BATCH = 50_000, 100


def _child() -> dict[str, float]:
    import redis

    from webtrawl.frontier import FrontierSettings, RedisFrontier
    from webtrawl.messages import NewUrl
    from webtrawl.node.redis_server import EmbeddedRedis

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-seen-") as tmp:
        server = EmbeddedRedis(Path(tmp)).start()
        try:
            client = redis.Redis.from_url(server.url)
            proc = psutil.Process(int(client.info("server")["process_id"]))

            def cpu_us() -> float:
                times = proc.cpu_times()
                return float(times.user + times.system) * 1e6

            for hosts in (1, 10, 100):
                settings = FrontierSettings(prefix=f"b{uuid.uuid4().hex[:8]}", shards=64, expected_urls=10_000_000)
                batches = [
                    [
                        NewUrl(f"http://h{(b * hosts + i % hosts) % 20000}.test/p/{b}/{i}/a-longer-path", depth=1)
                        for i in range(_BATCH)
                    ]
                    for b in range(_URLS // _BATCH)
                ]
                for name, frontier in (
                    ("new", RedisFrontier.open(client, settings)),
                    ("seen", RedisFrontier.open(client, settings)),
                ):
                    before = cpu_us()
                    for urls in batches:
                        frontier.add(urls)
                    out[f"{name} us ({hosts} hosts/call)"] = (cpu_us() - before) / _URLS
                client.flushall()
        finally:
            server.stop()
    return out


if __name__ == "__main__":
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _abab import main

    raise SystemExit(main(Path(__file__), __doc__, _child, None, digits=2))
