"""Fetcher memory held by idle keep-alive connections, by ``--idle-connections`` cap.

    .venv/bin/python benchmarks/bench_idle.py [--hosts 1000] [--caps 100000,512,256,128,64] [--corpus-dir DIR]

Starts the test web (real corpus pages, ~174 KiB each) in its own process, then for each cap runs a fresh process
that fetches ``/`` of ``--hosts`` distinct HTTPS hosts through webtrawl's ``HttpClient`` (uvloop, concurrency 64) and
prints its RSS growth, the idle connections left open and the MiB each one costs. Load-independent, unlike the RSS
of a ``trawl bench`` run, which follows how many hosts the crawl manages to visit within the keep-alive time.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import uvloop

from webtrawl.config import CrawlConfig
from webtrawl.fetch import HttpClient
from webtrawl_bench.testweb_proc import TestWebProcess, WebSpec
from webtrawl_testweb import DEFAULT_CORPUS_DIR


def _rss() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS"))


async def _measure(info: dict[str, object], hosts: int, cap: int) -> dict[str, object]:
    cfg = CrawlConfig().with_options(
        ip_allow=["127.0.0.0/8"],
        resolve=["*.test=127.0.0.1"],
        ports=list(info["ports"]),  # type: ignore[call-overload]
        ca_file=Path(str(info["ca_file"])),
        connect=10.0,
        total=60.0,
        robots=30.0,
        idle_connections=cap,
    )
    https = [i for i in range(2 * hosts + 2) if i % 4][: hosts + 1]  # WebModel: every 4th host is http only
    urls = [f"https://site{i}.test:{info['https_port']}/" for i in https]
    sem = asyncio.Semaphore(64)
    async with HttpClient(cfg.fetch, cfg.limits) as client:
        await client.fetch(urls[-1])  # warm-up: imports, TLS context, first buffers
        gc.collect()
        before = _rss()
        body = 0
        statuses: dict[int, int] = {}

        async def one(url: str) -> None:
            nonlocal body
            async with sem:
                resp = await client.fetch(url)
                body += len(resp.body)
                statuses[resp.status] = statuses.get(resp.status, 0) + 1

        await asyncio.gather(*(one(u) for u in urls[:hosts]))
        client.trim_idle()
        gc.collect()
        idle = client.idle_count()
        grown = _rss() - before
    return {"cap": cap, "idle": idle, "rss_mib": grown / 2**20, "body_kib": body / hosts / 1024, "st": str(statuses)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=1000)
    ap.add_argument("--caps", default="100000,512,256,128,64")
    ap.add_argument("--corpus-dir", type=Path, default=DEFAULT_CORPUS_DIR, help="real pages (../shared/corpus)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        info, cap = json.loads(args.child)
        print(json.dumps(uvloop.run(_measure(info, args.hosts, cap))))
        return
    spec = WebSpec(hosts=2 * args.hosts + 2, corpus_fraction=1.0, min_pages=3, max_pages=3, corpus_dir=args.corpus_dir)
    with tempfile.TemporaryDirectory() as tmp, TestWebProcess(spec, Path(tmp)) as web:
        info = {"ports": web.ports, "ca_file": web.info["ca_file"], "https_port": web.info["https_port"]}
        print(f"{args.hosts} HTTPS hosts, one corpus page each, concurrency 64")
        rows = []
        for cap in (int(c) for c in args.caps.split(",")):
            child = json.dumps([info, cap])
            cmd = [sys.executable, __file__, "--hosts", str(args.hosts), "--child", child]
            rows.append(json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout))
        low = min(rows, key=lambda r: r["idle"])
        for out in rows:
            extra = out["idle"] - low["idle"]
            per = (out["rss_mib"] - low["rss_mib"]) / extra if extra else float("nan")
            print(
                f"  cap {out['cap']:>6}: {out['idle']:>5} idle connections, RSS +{out['rss_mib']:6.1f} MiB "
                f"({per:.2f} MiB per idle connection over the smallest cap; mean body {out['body_kib']:.0f} KiB, "
                f"statuses {out['st']})"
            )


if __name__ == "__main__":
    main()
