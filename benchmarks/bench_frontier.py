"""Throughput and memory of the Redis frontier, against a private embedded redis-server.

    .venv/bin/python benchmarks/bench_frontier.py [--hosts 2000] [--sizes 100000,1000000] [--batch 100]

Prints: URL adds per second (batches of links spread over all hosts, and page-like batches where most links stay
on the page's host), lease + release + complete cycles per second (sync and asyncio clients), and Redis bytes per
queued URL (INFO used_memory delta / queued) at each size, with and without the fixed-size Bloom filter.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import psutil
import redis

from webtrawl.frontier import (
    AsyncRedisFrontier,
    FrontierSettings,
    RedisFrontier,
    Release,
    UrlAction,
    connect_async,
    connect_sync,
)
from webtrawl.frontier.keys import shard_tag
from webtrawl.messages import Completion, NewUrl
from webtrawl.node.redis_server import EmbeddedRedis

_CORPUS_URLS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "urls.tsv"


def _vocabulary() -> list[str]:
    """Words of real URL paths (the shared corpus), so paths look like the web's."""
    try:
        lines = _CORPUS_URLS.read_text().splitlines()[1:]
    except OSError:
        return ["news", "world", "article", "index", "page", "blog", "post", "category", "archive", "review"]
    paths = " ".join(urlsplit(line.split("\t", 1)[-1]).path.lower() for line in lines)
    return sorted(set(re.findall(r"[a-z]{3,12}", paths)))


class UrlMaker:
    """Distinct, realistic URLs: 40-70 character paths with words, numbers, sometimes a query."""

    def __init__(self, hosts: int, seed: int = 7) -> None:
        self.rng = random.Random(seed)
        self.words = _vocabulary()
        self.hosts = [f"https://www.{self._word()}-{i}.example.com" for i in range(hosts)]
        self.n = 0

    def _word(self) -> str:
        return self.rng.choice(self.words)

    def path(self) -> str:
        self.n += 1
        rng = self.rng
        target = rng.randint(40, 70)
        suffix = f"-{self.n}" + (f"?page={rng.randint(1, 50)}" if rng.random() < 0.3 else "")
        head = "/" + "/".join(self._word() for _ in range(rng.randint(1, 3))) + f"/{rng.randint(2000, 2025)}/"
        slug = "-".join(self._word() for _ in range(12))
        return (head + slug)[: target - len(suffix)] + suffix

    def spread(self, size: int) -> list[NewUrl]:
        return [NewUrl(self.rng.choice(self.hosts) + self.path(), depth=1) for _ in range(size)]

    def page_like(self, size: int) -> list[NewUrl]:
        home = self.rng.choice(self.hosts)
        return [
            NewUrl((home if self.rng.random() < 0.8 else self.rng.choice(self.hosts)) + self.path(), depth=2)
            for _ in range(size)
        ]

    def with_nav(self, size: int) -> list[NewUrl]:
        """A page of one of 20 sites: 40% site-wide navigation links (the same 40 on every page), 60% new."""
        home = self.hosts[self.rng.randrange(min(20, len(self.hosts)))]
        nav = [NewUrl(f"{home}/section/{i}/index.html", depth=1) for i in range(size * 2 // 5)]
        return nav + self.page_like(size - len(nav))


def _used_memory(client: redis.Redis) -> int:
    """used_memory without AOF and client buffers, read when no AOF rewrite is buffering writes."""
    while int(client.info("persistence")["aof_rewrite_in_progress"]):
        time.sleep(0.05)
    mem = client.info("memory")
    return int(mem["used_memory"]) - int(mem.get("mem_aof_buffer", 0)) - int(mem.get("mem_clients_normal", 0))


def _bloom_bytes(f: RedisFrontier) -> int:
    keys = [shard_tag(f.core.settings.prefix, s) + "bloom" for s in range(f.shards)]
    return sum(int(f.client.memory_usage(key) or 0) for key in keys)


def _batches(make: Callable[[int], list[NewUrl]], total: int, batch: int) -> Iterator[list[NewUrl]]:
    for start in range(0, total, batch):
        yield make(min(batch, total - start))


def _cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


def bench_adds(
    f: RedisFrontier, make: Callable[[int], list[NewUrl]], total: int, batch: int, server_pid: int
) -> tuple[float, int, float]:
    """(links per second, URLs added, Redis CPU microseconds per link).

    One client can only send as fast as Python builds the calls; the server's CPU per link is what bounds the
    adds/s of one Redis however many parsers send: 1e6 / (us per link).
    """
    batches = list(_batches(make, total, batch))  # URL generation is not what we measure
    cpu = _cpu(server_pid)
    start = time.perf_counter()
    added = sum(f.add(b).added for b in batches)
    rate = total / (time.perf_counter() - start)
    return rate, added, 1e6 * (_cpu(server_pid) - cpu) / total


def bench_cycles(f: RedisFrontier, seconds: float, per_call: int) -> float:
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        leases = f.lease("bench/f0", per_call)
        f.release([Release(x.token, x.shard, x.host, UrlAction.KEEP, delay_ms=0) for x in leases])
        done += f.complete([Completion(x.token, x.shard, {"stored": 1}) for x in leases])
    return done / (time.perf_counter() - start)


async def _async_cycles(url: str, settings: FrontierSettings, seconds: float, per_call: int) -> float:
    client = await connect_async(url)
    f = await AsyncRedisFrontier.open(client, settings)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        leases = await f.lease("bench/f1", per_call)
        await f.release([Release(x.token, x.shard, x.host, UrlAction.KEEP, delay_ms=0) for x in leases])
        done += await f.complete([Completion(x.token, x.shard, {"stored": 1}) for x in leases])
    await client.aclose()
    return done / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=100, help="URLs per add() call (a parser batch of pages)")
    parser.add_argument("--sizes", default="100000,1000000", help="queued URL counts to measure memory at")
    parser.add_argument("--rate-urls", type=int, default=100_000, help="URLs per add-rate measurement")
    parser.add_argument("--cycle-seconds", type=float, default=5.0)
    parser.add_argument("--lease-batch", type=int, default=32)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    with tempfile.TemporaryDirectory(prefix="wtbench") as tmp, EmbeddedRedis(Path(tmp) / "redis") as server:
        client = connect_sync(server.url)
        info = client.info("server")
        mem = client.info("memory")
        print(
            f"redis {info['redis_version']}, allocator {mem['mem_allocator']}, {args.hosts} hosts, batch {args.batch}"
        )
        make = UrlMaker(args.hosts)

        # --- add rate (own crawl prefixes, dropped afterwards) --------------------------------------------------
        shapes = {
            f"new URLs spread over {args.hosts} hosts": make.spread,
            "new URLs, page-like: 80% on the page's host": make.page_like,
            "page-like, 40% repeated site navigation": make.with_nav,
        }
        for i, (shape, maker) in enumerate(shapes.items()):
            f = RedisFrontier.open(client, FrontierSettings(prefix=f"rate{i}", expected_urls=10_000_000))
            rate, added, us = bench_adds(f, maker, args.rate_urls, args.batch, server.pid or 0)
            print(
                f"add: {rate:,.0f} links/s, {added / args.rate_urls:.0%} new, Redis {us:.1f} us CPU per link "
                f"(one Redis: <= {1e6 / us:,.0f} links/s)  [{shape}; {f.shards} shards, Bloom k={f.core.bloom_k}]"
            )
        client.flushall()

        # --- memory per queued URL ------------------------------------------------------------------------------
        base = _used_memory(client)
        settings = FrontierSettings(prefix="wt", expected_urls=max(sizes), host_queue_cap=10**9, host_budget=0)
        f = RedisFrontier.open(client, settings)
        queued = 0
        for size in sizes:
            for batch in _batches(make.spread, size - queued, 1000):
                queued += f.add(batch).added
            used = _used_memory(client) - base
            bloom = _bloom_bytes(f)
            print(
                f"memory at {queued:,} queued: {used / queued:.1f} B/URL "
                f"({(used - bloom) / queued:.1f} B/URL without the {bloom / 1e6:.1f} MB Bloom filter "
                f"sized for {settings.expected_urls:,} URLs)"
            )

        # --- lease + release + complete cycles ------------------------------------------------------------------
        rate = bench_cycles(f, args.cycle_seconds, args.lease_batch)
        print(f"lease+release+complete: {rate:,.0f} URLs/s  [sync, lease batch {args.lease_batch}]")
        rate = asyncio.run(_async_cycles(server.url, settings, args.cycle_seconds, args.lease_batch))
        print(f"lease+release+complete: {rate:,.0f} URLs/s  [asyncio, lease batch {args.lease_batch}]")
        c = f.counters()
        print(f"counters: queued {c.queued:,}, inflight {c.inflight}, stored {c.get('stored'):,}")
        client.close()


if __name__ == "__main__":
    main()
