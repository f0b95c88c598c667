"""Sink speed from one process: rows/s and CPU per 1,000 item rows into each sink, as a parser hands them over.

Batches are what a parser writes at a time: 32 pages of 10 items each (name, price, sku, in_stock, a 200-character
description, a list of tags). For PostgreSQL the server's CPU (the sink's backend process) is shown beside the
client's; it runs on the same machine here.

    .venv/bin/python benchmarks/bench_sinks.py [--batches N] [--sinks csv,sqlite,...] [--pg postgresql://...]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from pathlib import Path

import psutil
import psycopg

from webtrawl.messages import Lease, Page
from webtrawl.store import Item, PageOutput, PageRecord, SinkContext
from webtrawl.store.registry import open_sink

PAGES, ITEMS = 32, 10


def batch(b: int) -> list[PageOutput]:
    out = []
    for p in range(PAGES):
        url = f"https://shop{p % 7}.test/product/{b}-{p}"
        lease = Lease(token="bench/f0.1", shard=0, host=f"shop{p % 7}.test", url=url)
        fetch_time = "2026-11-23T18:00:00.000Z"
        record = PageRecord(url=url, final_url=url, status=200, fetch_time=fetch_time, title="A product page")
        items = [
            Item(
                url=url,
                fetch_time=fetch_time,
                index=i,
                fields={
                    "name": f"Product {b}-{p}-{i}",
                    "price": 9.99 + i,
                    "sku": b * 1000 + p * 10 + i,
                    "in_stock": i % 3 != 0,
                    "description": "Lorem ipsum dolor sit amet, " * 7,
                    "tags": ["new", "sale", f"cat{i}"],
                },
            )
            for i in range(ITEMS)
        ]
        out.append(PageOutput(page=Page(lease=lease, status=200), record=record, items=items))
    return out


def _server_cpu(pg_url: str | None) -> float:
    """CPU seconds so far of the sink's backend process (the one connection named ``webtrawl``), 0 if none."""
    if pg_url is None:
        return 0.0
    with psycopg.connect(pg_url) as conn:
        row = conn.execute("SELECT pid FROM pg_stat_activity WHERE application_name = 'webtrawl'").fetchone()
    if row is None:
        return 0.0
    times = psutil.Process(row[0]).cpu_times()
    return float(times.user + times.system)


def run(url: str, batches: list[list[PageOutput]], pg_url: str | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ctx = SinkContext(out_dir=Path(tmp), prefix="bench-p0", crawl_id="bench", chunk=10_000)
        sink = open_sink(url.replace("{tmp}", tmp), "items", ctx)
        sink.write(batches[0])  # create the table / the first file outside the timing
        server0 = _server_cpu(pg_url)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for b in batches[1:]:
            sink.write(b)
            sink.flush()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        server = _server_cpu(pg_url) - server0
        sink.close()
    rows = (len(batches) - 1) * PAGES * ITEMS
    return {"rows_s": rows / wall, "cpu_ms_per_1k": cpu * 1e6 / rows, "server_ms_per_1k": server * 1e6 / rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--sinks", default="jsonl,csv,parquet,sqlite,postgresql")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres", help="server to use")
    args = parser.parse_args()
    batches = [batch(b) for b in range(args.batches + 1)]
    db = f"wt_bench_{uuid.uuid4().hex[:8]}"
    admin = args.pg
    pg_url = admin.rsplit("/", 1)[0] + "/" + db
    urls = {
        "jsonl": "jsonl:{tmp}/jsonl",
        "csv": "csv:{tmp}/csv",
        "parquet": "parquet:{tmp}/pq",
        "sqlite": "sqlite:///{tmp}/items.db",
        "postgresql": pg_url + "?table=items",
    }
    wanted = args.sinks.split(",")
    if "postgresql" in wanted:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{db}"')
    print(f"{PAGES} pages x {ITEMS} items per batch, {args.batches} batches, load {os.getloadavg()[0]:.1f}")
    print(f"{'sink':<11} {'rows/s':>9} {'CPU ms/1k rows':>15} {'server ms/1k':>13}")
    try:
        for name in wanted:
            r = run(urls[name], batches, pg_url if name == "postgresql" else None)
            server = f"{r['server_ms_per_1k']:13.1f}" if name == "postgresql" else f"{'':>13}"
            print(f"{name:<11} {r['rows_s']:9.0f} {r['cpu_ms_per_1k']:15.1f} {server}")
    finally:
        if "postgresql" in wanted:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


if __name__ == "__main__":
    main()
