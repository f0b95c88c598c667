"""Throughput and memory of the Redis frontier, against a private embedded redis-server.

    .venv/bin/python benchmarks/bench_frontier.py [--hosts 2000] [--sizes 100000,1000000] [--batch 100]
        [--clients 1,2,4] [--populations synthetic,real]

Prints: URL adds per second (batches of links spread over all hosts, and page-like batches where most links stay
on the page's host) from one client and from several client processes at once (like a node's parsers), each with
the Redis server's CPU per URL (the load-independent number: one Redis sustains at most 1e6 / us adds per second)
and the client's CPU per URL; lease + release + complete cycles per second (sync and asyncio clients); and Redis
bytes per queued URL (INFO used_memory delta / queued) at each size, with and without the fixed-size Bloom filter,
for two URL populations: synthetic 40-70 character paths, and the real outlinks of the corpus pages (their path +
query on the same synthetic hosts, so only the paths differ).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import multiprocessing
import random
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import psutil
import redis
from selectolax.lexbor import LexborHTMLParser

from webtrawl.errors import BadUrl, SchemeError
from webtrawl.formats.canonical import canonicalize
from webtrawl.frontier import (
    AsyncRedisFrontier,
    FrontierSettings,
    RedisFrontier,
    Release,
    UrlAction,
    connect_async,
    connect_sync,
)
from webtrawl.frontier.keys import shard_tag, split_url
from webtrawl.messages import Completion, NewUrl
from webtrawl.names import PRIORITY_LEVELS
from webtrawl.node.redis_server import EmbeddedRedis

_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
_CORPUS_URLS = _CORPUS / "urls.tsv"


def _vocabulary() -> list[str]:
    """Words of real URL paths (the shared corpus), so paths look like the web's."""
    try:
        lines = _CORPUS_URLS.read_text().splitlines()[1:]
    except OSError:
        return ["news", "world", "article", "index", "page", "blog", "post", "category", "archive", "review"]
    paths = " ".join(urlsplit(line.split("\t", 1)[-1]).path.lower() for line in lines)
    return sorted(set(re.findall(r"[a-z]{3,12}", paths)))


def real_rests(corpus: Path = _CORPUS) -> list[str]:
    """Path + query of every distinct http(s) outlink of the corpus pages, canonicalized against the page's URL (a
    path linked on several hosts, like ``/``, is there once per host)."""
    bases = dict(line.split("\t", 1) for line in (corpus / "urls.tsv").read_text().splitlines()[1:])
    urls: set[str] = set()
    for page in sorted((corpus / "pages").glob("*.html.gz")):
        base = bases.get(page.name.removesuffix(".html.gz"))
        if base is None:
            continue
        for node in LexborHTMLParser(gzip.decompress(page.read_bytes())).css("a[href]"):
            href = node.attributes.get("href")
            if href:
                try:
                    urls.add(canonicalize(href, base))
                except (BadUrl, SchemeError):  # unparsable, or mailto:, javascript: ...
                    continue
    return [parts.rest for parts in map(split_url, sorted(urls)) if parts is not None]


class UrlMaker:
    """Distinct, realistic URLs: 40-70 character paths with words, numbers, sometimes a query; or, with ``rests``,
    real paths (each host gets each path at most once)."""

    def __init__(
        self, hosts: int, seed: int = 7, rests: list[str] | None = None, first: int = 0, depths: int = 0
    ) -> None:
        self.rng = random.Random(seed)
        self.depths = depths  # spread(): depths 0..depths-1 at random (several priority levels per host); 0: all 1
        self.ranked = 0.0  # spread(): this fraction of URLs get an explicit priority level (a rule's or callback's)
        self.words = _vocabulary()
        self.hosts = [f"https://www.{self._word()}-{i}.example.com" for i in range(hosts)]
        self.n = first  # the synthetic paths' serial number: client processes start at different ones
        self.rests = rests
        self._used: set[tuple[int, str]] = set()

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

    def url(self, host: int) -> str:
        if self.rests is None:
            return self.hosts[host] + self.path()
        while True:
            rest = self.rests[self.rng.randrange(len(self.rests))]
            if (host, rest) not in self._used:
                self._used.add((host, rest))
                return self.hosts[host] + rest

    def spread(self, size: int) -> list[NewUrl]:
        rng, count, depths, ranked = self.rng, len(self.hosts), self.depths, self.ranked
        return [
            NewUrl(
                self.url(rng.randrange(count)),
                depth=rng.randrange(depths) if depths else 1,
                priority=rng.randrange(PRIORITY_LEVELS) if ranked and rng.random() < ranked else -1,
            )
            for _ in range(size)
        ]

    def page_like(self, size: int) -> list[NewUrl]:
        rng, count = self.rng, len(self.hosts)
        home = rng.randrange(count)
        return [NewUrl(self.url(home if rng.random() < 0.8 else rng.randrange(count)), depth=2) for _ in range(size)]

    def with_nav(self, size: int) -> list[NewUrl]:
        """A page of one of 20 sites: 40% site-wide navigation links (the same 40 on every page), 60% new."""
        home = self.rng.randrange(min(20, len(self.hosts)))
        nav = [NewUrl(f"{self.hosts[home]}/section/{i}/index.html", depth=1) for i in range(size * 2 // 5)]
        return nav + self.page_like(size - len(nav))


def _used_memory(client: redis.Redis) -> int:
    """used_memory without AOF and client buffers, read when no AOF rewrite is buffering writes.

    The slow log is emptied first: it keeps the first arguments of up to 128 commands slower than 10 ms (a large
    add call can be one), up to ~0.7 MB that is not frontier data.
    """
    while int(client.info("persistence")["aof_rewrite_in_progress"]):
        time.sleep(0.05)
    client.slowlog_reset()
    mem = client.info("memory")
    return int(mem["used_memory"]) - int(mem.get("mem_aof_buffer", 0)) - int(mem.get("mem_clients_normal", 0))


def _fresh(client: redis.Redis) -> None:
    """Empty Redis and a rewritten (empty) AOF: a measurement then never overlaps an AOF rewrite, whose cost in
    the server (copying every write to the child) depends on when the rewrite happens to start."""
    client.flushall()
    while int(client.info("persistence")["aof_rewrite_in_progress"]):
        time.sleep(0.05)
    client.bgrewriteaof()
    time.sleep(0.1)
    while int(client.info("persistence")["aof_rewrite_in_progress"]) or client.info("persistence").get(
        "aof_rewrite_scheduled"
    ):
        time.sleep(0.05)


def _bloom_bytes(f: RedisFrontier) -> int:
    keys = [shard_tag(f.core.settings.prefix, s) + "bloom" for s in range(f.shards)]
    return sum(int(f.client.memory_usage(key) or 0) for key in keys)


def _batches(make: Callable[[int], list[NewUrl]], total: int, batch: int) -> Iterator[list[NewUrl]]:
    for start in range(0, total, batch):
        yield make(min(batch, total - start))


def _cpu(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


class AddRun(NamedTuple):
    rate: float  # links per second (all clients together)
    new: float  # share of the links that were new
    redis_us: float  # Redis server CPU per link
    client_us: float  # client CPU per link (per process: each client process spends this on its own links)


def bench_adds(
    f: RedisFrontier, make: Callable[[int], list[NewUrl]], total: int, batch: int, server_pid: int
) -> AddRun:
    """One client in this process.

    One client can only send as fast as Python builds the calls; the server's CPU per link is what bounds the
    adds/s of one Redis however many parsers send: 1e6 / (us per link).
    """
    batches = list(_batches(make, total, batch))  # URL generation is not what we measure
    cpu, own = _cpu(server_pid), time.process_time()
    start = time.perf_counter()
    added = sum(f.add(b).added for b in batches)
    rate = total / (time.perf_counter() - start)
    return AddRun(
        rate, added / total, 1e6 * (_cpu(server_pid) - cpu) / total, 1e6 * (time.process_time() - own) / total
    )


def _client_process(job: dict[str, Any], barrier: Any, results: Any) -> None:
    """One of several concurrent clients: its own connection and URLs (serial numbers apart from the others')."""
    client = connect_sync(job["url"])
    f = RedisFrontier.open(client, job["settings"])
    make = UrlMaker(job["hosts"], seed=job["seed"], rests=job["rests"], first=job["first"])
    batches = list(_batches(getattr(make, job["shape"]), job["total"], job["batch"]))
    barrier.wait()
    own = time.process_time()
    added = sum(f.add(b).added for b in batches)
    results.put((time.perf_counter(), time.process_time() - own, added))
    client.close()


def bench_adds_parallel(job: dict[str, Any], clients: int, server_pid: int) -> AddRun:
    """``clients`` processes add ``job["total"]`` links between them, all at once."""
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(clients + 1), ctx.Queue()
    each = job["total"] // clients
    procs = [
        ctx.Process(
            target=_client_process,
            args=({**job, "seed": 100 + i, "first": (i + 1) * 10**8, "total": each}, barrier, results),
        )
        for i in range(clients)
    ]
    for proc in procs:
        proc.start()
    barrier.wait()
    cpu, start = _cpu(server_pid), time.perf_counter()
    done = [results.get() for _ in procs]
    server = _cpu(server_pid) - cpu
    for proc in procs:
        proc.join()
    total = each * clients
    end = max(d[0] for d in done)
    added = sum(d[2] for d in done)
    own = sum(d[1] for d in done)
    return AddRun(total / (end - start), added / total, 1e6 * server / total, 1e6 * own / total)


def bench_cycles(f: RedisFrontier, seconds: float, per_call: int) -> float:
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        leases = f.lease("bench/f0", per_call)
        f.release([Release(x.token, x.shard, x.host, UrlAction.KEEP, delay_ms=0) for x in leases])
        done += f.complete([Completion(x.token, x.shard, {"stored": 1}) for x in leases]).count(None)
    return done / (time.perf_counter() - start)


async def _async_cycles(url: str, settings: FrontierSettings, seconds: float, per_call: int) -> float:
    client = await connect_async(url)
    f = await AsyncRedisFrontier.open(client, settings)
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        leases = await f.lease("bench/f1", per_call)
        await f.release([Release(x.token, x.shard, x.host, UrlAction.KEEP, delay_ms=0) for x in leases])
        done += (await f.complete([Completion(x.token, x.shard, {"stored": 1}) for x in leases])).count(None)
    await client.aclose()
    return done / (time.perf_counter() - start)


def _report_adds(run: AddRun, clients: int, shape: str, f: RedisFrontier) -> None:
    who = "1 client" if clients == 1 else f"{clients} client processes"
    print(
        f"add, {who}: {run.rate:,.0f} links/s, {run.new:.0%} new, Redis {run.redis_us:.1f} us CPU per link "
        f"(one Redis: <= {1e6 / run.redis_us:,.0f} links/s), client {run.client_us:.1f} us CPU per link  "
        f"[{shape}; {f.shards} shards, Bloom k={f.core.bloom_k}]"
    )


def _memory(client: redis.Redis, make: UrlMaker, sizes: list[int], label: str) -> RedisFrontier:
    """Fill a fresh crawl up to each size and print Redis bytes per queued URL."""
    _fresh(client)
    base = _used_memory(client)
    settings = FrontierSettings(prefix="wt", expected_urls=max(sizes), host_queue_cap=10**9, host_budget=0)
    f = RedisFrontier.open(client, settings)
    queued = rest_chars = 0
    for size in sizes:
        for batch in _batches(make.spread, size - queued, 1000):
            queued += f.add(batch).added
            rest_chars += sum(len(parts.rest) for parts in (split_url(u.url) for u in batch) if parts)
        used = _used_memory(client) - base
        bloom = _bloom_bytes(f)
        print(
            f"memory at {queued:,} queued, {label} (mean path+query {rest_chars / queued:.1f} chars): "
            f"{used / queued:.1f} B/URL ({(used - bloom) / queued:.1f} B/URL without the {bloom / 1e6:.1f} MB "
            f"Bloom filter sized for {settings.expected_urls:,} URLs)"
        )
    return f


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=100, help="URLs per add() call (a parser batch of pages)")
    parser.add_argument("--sizes", default="100000,1000000", help="queued URL counts to measure memory at")
    parser.add_argument("--rate-urls", type=int, default=100_000, help="URLs per add-rate measurement")
    parser.add_argument("--clients", default="1,2,4", help="client process counts for the add rate")
    parser.add_argument("--shards", type=int, default=FrontierSettings().shards, help="virtual shards of the crawl")
    parser.add_argument("--populations", default="synthetic,real", help="URL paths for the memory measurement")
    parser.add_argument(
        "--depths",
        type=int,
        default=0,
        help="memory: URL depths 0..N-1 at random, so hosts use several priority levels (0: every URL at depth 1)",
    )
    parser.add_argument(
        "--ranked", type=float, default=0.0, help="memory: this fraction of URLs have an explicit priority level"
    )
    parser.add_argument("--cycle-seconds", type=float, default=5.0, help="0: skip the lease cycles")
    parser.add_argument("--lease-batch", type=int, default=32)
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    client_counts = [int(n) for n in args.clients.split(",") if n]

    with tempfile.TemporaryDirectory(prefix="wtbench") as tmp, EmbeddedRedis(Path(tmp) / "redis") as server:
        client = connect_sync(server.url)
        info = client.info("server")
        mem = client.info("memory")
        print(
            f"redis {info['redis_version']}, allocator {mem['mem_allocator']}, {args.hosts} hosts, batch {args.batch}"
        )
        make = UrlMaker(args.hosts)
        pid = server.pid or 0

        # --- add rate (a fresh crawl and AOF per measurement) --------------------------------------------------
        shapes = {
            "spread": f"new URLs spread over {args.hosts} hosts",
            "page_like": "new URLs, page-like: 80% on the page's host",
            "with_nav": "page-like, 40% repeated site navigation",
        }
        for i, (name, shape) in enumerate(shapes.items()):
            for clients in client_counts:
                _fresh(client)
                settings = FrontierSettings(prefix=f"rate{i}", expected_urls=10_000_000, shards=args.shards)
                f = RedisFrontier.open(client, settings)
                if clients == 1:
                    run = bench_adds(f, getattr(make, name), args.rate_urls, args.batch, pid)
                else:
                    job = {"url": server.url, "settings": settings, "hosts": args.hosts, "rests": None}
                    job.update(shape=name, total=args.rate_urls, batch=args.batch)
                    run = bench_adds_parallel(job, clients, pid)
                _report_adds(run, clients, shape, f)

        # --- memory per queued URL ------------------------------------------------------------------------------
        populations = [p for p in args.populations.split(",") if p]
        for population in populations:
            if population == "real":
                rests = real_rests()
                label = f"paths of the {len(rests):,} distinct corpus outlinks on {args.hosts} hosts"
                f = _memory(client, UrlMaker(args.hosts, rests=rests, depths=args.depths), sizes, label)
            else:
                make.depths, make.ranked = args.depths, args.ranked
                label = "synthetic paths" + (f", depths 0-{args.depths - 1}" if args.depths else "")
                label += f", {args.ranked:.0%} ranked" if args.ranked else ""
                f = _memory(client, make, sizes, label)

        # --- lease + release + complete cycles ------------------------------------------------------------------
        if not args.cycle_seconds:
            return
        rate = bench_cycles(f, args.cycle_seconds, args.lease_batch)
        print(f"lease+release+complete: {rate:,.0f} URLs/s  [sync, lease batch {args.lease_batch}]")
        rate = asyncio.run(_async_cycles(server.url, f.core.settings, args.cycle_seconds, args.lease_batch))
        print(f"lease+release+complete: {rate:,.0f} URLs/s  [asyncio, lease batch {args.lease_batch}]")
        c = f.counters()
        print(f"counters: queued {c.queued:,}, inflight {c.inflight}, stored {c.get('stored'):,}")
        client.close()


if __name__ == "__main__":
    main()
