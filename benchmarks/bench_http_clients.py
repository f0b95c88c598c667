"""What the fetcher's HTTP stack costs against the bare libraries it could stand on (issue 21: where the floor is).

    PYTHONPATH=src:testweb/src .venv/bin/python benchmarks/bench_http_clients.py [--requests 600] [--rounds 5]

The server of bench_fetch_cost.py (aiohttp on uvloop in its own process, the 181 corpus pages gzip-encoded, TLS 1.3
with the test web's CA, and plain HTTP) answers the same URL list for every client: ``--requests`` GETs over
``--hosts`` host names, 85% HTTPS, 16 in flight, and a ``--new`` share of them to a host name met once (a new
connection and TLS handshake: a broad crawl's new hosts). Each client reads the raw (still gzip-encoded) body.
Reported: the median over rounds of this process's CPU time per page (all threads: a Rust client's runtime too).

- ``webtrawl``: ``HttpClient.fetch`` (aiohttp underneath, plus the address policy, caps, timing, TLS read buffer).
- ``aiohttp``: a bare ``ClientSession.get`` + ``read()`` on uvloop, no decompression: the library floor of today's
  fetcher.
- ``pyreqwest``: a Rust client (hyper, tokio), where HTTP framing, TLS and the pool are compiled; skipped when not
  installed (``pip install pyreqwest``: a bench-only dependency, not the crawler's).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import uvloop
from aiohttp.abc import AbstractResolver

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_fetch_cost import _serve, client_config

from webtrawl.config import CrawlConfig
from webtrawl.fetch import HttpClient
from webtrawl.fetch.wire import ssl_context

_Fetch = Callable[[str], Awaitable[bytes]]


class _Loopback(AbstractResolver):
    async def resolve(self, host: str, port: int = 0, family: int = socket.AF_INET) -> list[dict[str, Any]]:
        return [{"hostname": host, "host": "127.0.0.1", "port": port, "family": socket.AF_INET, "proto": 0, "flags": 0}]

    async def close(self) -> None:
        pass


async def _timed(fetch: _Fetch, urls: list[str]) -> float:
    sem = asyncio.Semaphore(16)
    done = 0

    async def one(url: str) -> None:
        nonlocal done
        async with sem:
            body = await fetch(url)
            if body:
                done += 1

    start = time.process_time()
    await asyncio.gather(*(one(u) for u in urls))
    return (time.process_time() - start) / max(1, done) * 1000


async def _webtrawl(cfg: CrawlConfig, urls: list[str]) -> float:
    async with HttpClient(cfg.fetch, cfg.limits) as client:

        async def fetch(url: str) -> bytes:
            return (await client.fetch(url)).body

        return await _timed(fetch, urls)


async def _aiohttp(cfg: CrawlConfig, urls: list[str]) -> float:
    connector = aiohttp.TCPConnector(resolver=_Loopback(), ssl=ssl_context(cfg.fetch), limit=256, limit_per_host=0)
    async with aiohttp.ClientSession(connector=connector, auto_decompress=False) as session:

        async def fetch(url: str) -> bytes:
            async with session.get(url) as resp:
                return await resp.read()

        return await _timed(fetch, urls)


async def _pyreqwest(cfg: CrawlConfig, urls: list[str], hosts: list[tuple[str, int]]) -> float:
    from pyreqwest.client import ClientBuilder

    assert cfg.fetch.ca_file is not None
    builder = ClientBuilder().add_root_certificate_pem(cfg.fetch.ca_file.read_bytes()).gzip(False)
    for host, port in hosts:
        builder = builder.resolve(host, "127.0.0.1", port)
    async with builder.build() as client:

        async def fetch(url: str) -> bytes:
            resp = await client.get(url).build().send()
            return bytes(await resp.bytes())

        return await _timed(fetch, urls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hosts", type=int, default=100)
    ap.add_argument("--new", type=float, default=0.25)
    args = ap.parse_args()
    try:
        import pyreqwest  # noqa: F401

        have_reqwest = True
    except ImportError:
        have_reqwest = False
    with tempfile.TemporaryDirectory() as tmp, multiprocessing.Manager() as manager:
        ports = manager.list()
        server = multiprocessing.Process(target=_serve, args=(Path(tmp) / "certs", False, ports), daemon=True)
        server.start()
        while len(ports) < 2:
            if not server.is_alive():
                raise SystemExit("bench_http_clients: the server process died")
            time.sleep(0.05)
        https, http = ports[0], ports[1]
        cfg = client_config(Path(tmp), https, http)
        rng = random.Random(1)
        urls, hosts = [], set()
        for i in range(args.requests):
            host = f"site{100_000 + i}.test" if rng.random() < args.new else f"site{rng.randrange(args.hosts)}.test"
            tls = rng.random() < 0.85
            hosts.add((host, https if tls else http))
            urls.append(f"https://{host}:{https}/p/{i}" if tls else f"http://{host}:{http}/p/{i}")
        variants: dict[str, Callable[[], Awaitable[float]]] = {
            "webtrawl": lambda: _webtrawl(cfg, urls),
            "aiohttp": lambda: _aiohttp(cfg, urls),
        }
        if have_reqwest:
            variants["pyreqwest"] = lambda: _pyreqwest(cfg, urls, sorted(hosts))
        per_page: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(args.rounds):
            for name, run in variants.items():
                per_page[name].append(uvloop.run(run()))
        server.kill()
    print(f"{args.requests} requests x {args.rounds} rounds, {args.hosts} hosts, new hosts {args.new:.0%}, 85% HTTPS")
    for name, values in per_page.items():
        runs = ", ".join(f"{x:.3f}" for x in values)
        print(f"{name:10} {statistics.median(values):.3f} ms CPU/page ({runs})")
    if not have_reqwest:
        print("pyreqwest: not installed (pip install pyreqwest), skipped")


if __name__ == "__main__":
    main()
