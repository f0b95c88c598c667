"""Client CPU per new HTTPS connection: the fetcher's largest cost in a broad crawl.

    .venv/bin/python benchmarks/bench_tls.py [--hosts 600] [--rounds 3] [--concurrency 50]

Starts the test web in its own process (its CPU is not counted), then fetches ``/robots.txt`` of ``--hosts``
distinct HTTPS hosts through webtrawl's ``HttpClient`` (uvloop, aiohttp, certificate verification against the
test CA), each on a new connection, and prints this process's CPU time per fetch (user + system). One fetch of
a small body on a fresh connection is DNS (pinned) + TCP connect + TLS handshake + request/response, i.e. the
per-connection overhead a crawl pays on top of the page itself.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import uvloop

from webtrawl.config import CrawlConfig
from webtrawl.fetch import HttpClient
from webtrawl_bench.testweb_proc import TestWebProcess, WebSpec


async def _round(cfg: CrawlConfig, urls: list[str], concurrency: int) -> float:
    """CPU seconds of this process for fetching every URL once on a fresh client (no connection reuse)."""
    sem = asyncio.Semaphore(concurrency)
    async with HttpClient(cfg.fetch, cfg.limits) as client:

        async def one(url: str) -> None:
            async with sem:
                await client.fetch(url)  # any status: robots.txt variants include 404 and 503

        start = time.process_time()
        await asyncio.gather(*(one(u) for u in urls))
        return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(WebSpec(hosts=args.hosts), Path(tmp)) as web:
        port = web.info["https_port"]
        cfg = CrawlConfig().with_options(
            ip_allow=["127.0.0.0/8"],
            resolve=["*.test=127.0.0.1"],
            ports=web.ports,
            ca_file=Path(web.info["ca_file"]),
            connect=10.0,
            total=30.0,
            robots=30.0,
        )
        urls = [f"https://site{i}.test:{port}/robots.txt" for i in range(args.hosts)]
        uvloop.install()
        asyncio.run(_round(cfg, urls[:50], args.concurrency))  # warm-up: imports, caches
        per_fetch = [asyncio.run(_round(cfg, urls, args.concurrency)) / len(urls) * 1000 for _ in range(args.rounds)]
    print(
        f"new HTTPS connection + robots.txt fetch: median {statistics.median(per_fetch):.3f} ms CPU "
        f"(rounds: {', '.join(f'{x:.3f}' for x in per_fetch)}; {args.hosts} hosts, concurrency {args.concurrency})"
    )


if __name__ == "__main__":
    main()
