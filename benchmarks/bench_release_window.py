"""Fetcher and Redis CPU per release through the fetcher's ReleaseBatcher, for a few batching windows.

    python benchmarks/bench_release_window.py [--rate 125] [--rounds 3] [--windows 10,30]

Releases arrive at ``--rate`` per second (Poisson, one fetcher's page rate on a quiet machine in ``trawl bench
--web realistic``) on hosts leased from a private redis-server; each window is run ``--rounds`` times, alternating.
Printed: medians of this process's CPU per release (us; the arrival loop's own timers included, the same for
every window) and the server's, and the mean batch size.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_add_cost import _server_us

from webtrawl.fetch.batcher import ReleaseBatcher
from webtrawl.frontier import FrontierSettings, Held, RedisFrontier, Release, Stale, UrlAction, connect_sync
from webtrawl.frontier.async_frontier import AsyncRedisFrontier
from webtrawl.frontier.connect import connect_async
from webtrawl.messages import NewUrl
from webtrawl.node.redis_server import EmbeddedRedis


async def _one(url: str, wait_s: float, rate: float, hosts: int) -> tuple[float, float, float]:
    sync = connect_sync(url)
    client = await connect_async(url)
    settings = FrontierSettings(prefix=f"b{uuid.uuid4().hex[:8]}", empty_poll_ms=0, host_gap_ms=0)
    RedisFrontier.open(sync, settings).add([NewUrl(f"http://h{h}.test/p0") for h in range(hosts)])
    frontier = await AsyncRedisFrontier.open(client, settings, create=False)
    leases = []
    while more := await frontier.lease("bench/f0", 64):
        leases += more
    calls = 0

    async def send(releases: list[Release]) -> list[Held | Stale | None]:
        nonlocal calls
        calls += 1
        return await frontier.release(releases)

    batcher = ReleaseBatcher(send, wait_s=wait_s)
    rng = random.Random(1)
    before, cpu = _server_us(sync), time.process_time()
    tasks = []
    for lease in leases:
        release = Release(lease.token, lease.shard, lease.host, UrlAction.KEEP, delay_ms=1000)
        tasks.append(asyncio.ensure_future(batcher.release(release)))
        await asyncio.sleep(rng.expovariate(rate))
    await asyncio.gather(*tasks)
    n = len(leases)
    client_us, redis_us = (time.process_time() - cpu) * 1e6 / n, (_server_us(sync) - before) / n
    sync.flushall()
    await client.aclose()
    return client_us, redis_us, n / calls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rate", type=float, default=125.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=400)
    ap.add_argument("--windows", default="10,30", help="windows to compare, ms")
    args = ap.parse_args(argv)
    windows = [float(w) / 1000 for w in args.windows.split(",")]
    rows: dict[float, list[tuple[float, float, float]]] = {w: [] for w in windows}
    with tempfile.TemporaryDirectory(prefix="bench-release-") as tmp:
        server = EmbeddedRedis(Path(tmp)).start()
        try:
            for _ in range(args.rounds):
                for wait_s in windows:
                    rows[wait_s].append(uvloop.run(_one(server.url, wait_s, args.rate, args.hosts)))
        finally:
            server.stop()
    for wait_s, runs in rows.items():
        client, redis, batch = (statistics.median(r[i] for r in runs) for i in range(3))
        print(
            f"window {wait_s * 1000:4.0f} ms: client {client:.0f} us/release, redis {redis:.0f} us/release, "
            f"{batch:.1f} releases per batch"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
