"""Sink speed from one process: rows/s and CPU per 1,000 item rows into each sink, as a parser hands them over.

Batches are what a parser writes at a time: 32 pages of 10 items each (name, price, sku, in_stock, a 200-character
description, a list of tags). The server's CPU is shown beside the client's (they run on the same machine here): for
PostgreSQL the sink's backend process; for MariaDB, NATS and RabbitMQ the whole server process that listens on the
port (so anything else it serves meanwhile counts too).

    .venv/bin/python benchmarks/bench_sinks.py [--batches N] [--sinks csv,sqlite,mysql,nats,amqp,json,...]
        [--pg postgresql://...] [--mysql mysql://...] [--nats nats://HOST:PORT] [--amqp amqp://...]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Callable
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


def _listener_cpu(port: int) -> float:
    """CPU seconds so far of the process listening on ``port`` (the server), 0 if it cannot be seen."""
    for conn in psutil.net_connections("tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
            times = psutil.Process(conn.pid).cpu_times()
            return float(times.user + times.system)
    return 0.0


def _server(name: str, url: str, pg_url: str) -> Callable[[], float] | None:
    if name == "postgresql":
        return lambda: _server_cpu(pg_url)
    if name in ("mysql", "nats", "amqp"):
        port = urllib.parse.urlsplit(url).port or {"mysql": 3306, "nats": 4222, "amqp": 5672}[name]
        return lambda: _listener_cpu(port)
    return None


def run(url: str, batches: list[list[PageOutput]], server_cpu: Callable[[], float] | None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        ctx = SinkContext(out_dir=Path(tmp), prefix="bench-p0", crawl_id="bench", chunk=10_000)
        sink = open_sink(url.replace("{tmp}", tmp), "items", ctx)
        sink.write(batches[0])  # create the table / the first file outside the timing
        server0 = server_cpu() if server_cpu else 0.0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for b in batches[1:]:
            sink.write(b)
            sink.flush()
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        server = server_cpu() - server0 if server_cpu else 0.0
        sink.close()
    rows = (len(batches) - 1) * PAGES * ITEMS
    return {"rows_s": rows / wall, "cpu_ms_per_1k": cpu * 1e6 / rows, "server_ms_per_1k": server * 1e6 / rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batches", type=int, default=60)
    parser.add_argument("--sinks", default="jsonl,csv,parquet,sqlite,postgresql,mysql,nats,amqp,json")
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres", help="server to use")
    parser.add_argument("--mysql", default="mysql://root@127.0.0.1:3306/test", help="a database we may add to")
    parser.add_argument("--nats", default="nats://127.0.0.1:4222", help="a JetStream server")
    parser.add_argument("--amqp", default="amqp://guest:guest@127.0.0.1:5672/%2F", help="a RabbitMQ vhost")
    args = parser.parse_args()
    batches = [batch(b) for b in range(args.batches + 1)]
    tag = uuid.uuid4().hex[:8]
    db = f"wt_bench_{tag}"
    admin = args.pg
    pg_url = admin.rsplit("/", 1)[0] + "/" + db
    urls = {
        "jsonl": "jsonl:{tmp}/jsonl",
        "csv": "csv:{tmp}/csv",
        "parquet": "parquet:{tmp}/pq",
        "sqlite": "sqlite:///{tmp}/items.db",
        "postgresql": pg_url + "?table=items",
        "mysql": f"{args.mysql}?table=wt_bench_{tag}",
        "nats": f"{args.nats}/wt.bench.{tag}",
        "amqp": f"{args.amqp}?queue=wt-bench-{tag}",
        "json": "json:{tmp}/items.json",
    }
    wanted = args.sinks.split(",")
    if "postgresql" in wanted:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{db}"')
    print(f"{PAGES} pages x {ITEMS} items per batch, {args.batches} batches, load {os.getloadavg()[0]:.1f}")
    print(f"{'sink':<11} {'rows/s':>9} {'CPU ms/1k rows':>15} {'server ms/1k':>13}")
    try:
        for name in wanted:
            server_cpu = _server(name, urls[name], pg_url)
            r = run(urls[name], batches, server_cpu)
            server = f"{r['server_ms_per_1k']:13.1f}" if server_cpu else f"{'':>13}"
            print(f"{name:<11} {r['rows_s']:9.0f} {r['cpu_ms_per_1k']:15.1f} {server}")
    finally:
        if "postgresql" in wanted:
            with psycopg.connect(admin, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        _clean_up(args, tag, wanted)


def _clean_up(args: argparse.Namespace, tag: str, wanted: list[str]) -> None:
    """Drop the MariaDB table, the JetStream stream and the RabbitMQ queue the run made."""
    if "mysql" in wanted:
        import pymysql

        from webtrawl.store.sinks.mysql import connect_params

        conn = pymysql.connect(**connect_params(args.mysql, "mysql"))
        with conn.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS wt_bench_{tag}")
        conn.close()
    if "nats" in wanted:
        import nats

        async def drop() -> None:
            nc = await nats.connect(args.nats)
            await nc.jetstream().delete_stream(f"wt_bench_{tag}")
            await nc.close()

        asyncio.run(drop())
    if "amqp" in wanted:
        import aio_pika

        async def drop_queue() -> None:
            async with await aio_pika.connect(args.amqp) as conn:
                await (await conn.channel()).queue_delete(f"wt-bench-{tag}")

        asyncio.run(drop_queue())


if __name__ == "__main__":
    main()
