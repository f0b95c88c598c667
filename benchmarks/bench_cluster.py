"""Pages per second of 1 and 2 ``trawl node`` processes sharing one local 3-master Redis Cluster.

    .venv/bin/python benchmarks/bench_cluster.py [--hosts 4000] [--warmup 15] [--window 30] [--json out.json]

Everything runs on this machine over loopback: a Redis Cluster (3 masters, :class:`LocalRedisCluster`), the test web
in its own process (real corpus pages, links restricted to the web's model) and the nodes. Each scenario starts
from empty masters, seeds the root of every host with ``trawl seed`` (so work is plentiful from the first second),
lets the nodes warm up, then measures over a window:

- pages/s: the frontier's ``fetched`` counter (whole crawl), and each node's own share from ``trawl status``;
- Redis round trips per fetched page: ``total_reads_processed`` summed over the masters (one per request or
  pipeline a client sends), and Redis commands (including those run inside scripts) and CPU per page;
- node CPU seconds per page (supervisor, fetchers, parsers: the psutil process tree of each node);
- bytes per page: downloaded body bytes (JSONL ``bytes``) and written output (WARC + JSONL on disk);
- Redis memory per queued URL at the end (masters' used_memory less the Bloom filters and the empty baseline).

Scenario "1 node": one node with F fetchers and P parsers; "2 nodes": two nodes with F/2 and P/2 each, so both
run the same number of processes on the same cores and the difference is the cost of sharing the frontier.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import redis

from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.frontier.keys import shard_tag
from webtrawl_bench import MODEL_URLS, TestWebProcess, WebSpec
from webtrawl_testweb import WebModel, WebOptions
from webtrawl_testweb.local_cluster import LocalRedisCluster

TRAWL = [sys.executable, "-m", "webtrawl"]


@dataclass
class Sample:
    at: float
    fetched: int
    reads: int
    commands: int
    redis_cpu: float
    node_cpu: float
    per_node: dict[str, int] = field(default_factory=dict)


def _masters(cluster: LocalRedisCluster) -> list[redis.Redis]:
    return [redis.Redis(host="127.0.0.1", port=p, protocol=2) for p in cluster.ports]


def _tree_cpu(pid: int) -> float:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def _sample(cluster: LocalRedisCluster, client: Any, nodes: list[subprocess.Popen[bytes]], cfg_url: str) -> Sample:
    reads = commands = 0
    cpu = 0.0
    for master in _masters(cluster):
        stats, info_cpu = master.info("stats"), master.info("cpu")
        reads += int(stats["total_reads_processed"])
        commands += int(stats["total_commands_processed"])
        cpu += float(info_cpu["used_cpu_user"]) + float(info_cpu["used_cpu_sys"])
        master.close()
    frontier = RedisFrontier.open(client, FrontierSettings(), create=False)
    fetched = frontier.counters().get("fetched")
    status = json.loads(
        subprocess.run([*TRAWL, "status", "--redis", cfg_url, "--cluster", "--json"], capture_output=True).stdout
    )
    per_node = {n["id"]: int(n["fetched"]) for n in status["nodes"]}
    node_cpu = sum(_tree_cpu(p.pid) for p in nodes)
    return Sample(time.monotonic(), fetched, reads, commands, cpu, node_cpu, per_node)


def _bloom_bytes(client: Any) -> int:
    shards = int(client.hget("wt:{wt:g}:meta", "shards") or 0)
    return sum(int(client.memory_usage(shard_tag("wt", s) + "bloom") or 0) for s in range(shards))


def _used_memory(cluster: LocalRedisCluster) -> int:
    total = 0
    for master in _masters(cluster):
        total += int(master.info("memory")["used_memory"])
        master.close()
    return total


def _output(outs: list[Path]) -> tuple[int, int, int]:
    """(records, downloaded body bytes, bytes written to disk) of the nodes' output directories."""
    rows = body = disk = 0
    for out in outs:
        for path in out.rglob("*"):
            if path.is_file() and (path.parent.name in ("warc", "records")):
                disk += path.stat().st_size
        for path in (out / "records").glob("*.jsonl*"):
            for line in path.read_text(errors="replace").splitlines():
                if line.strip():
                    rows += 1
                    body += int(json.loads(line).get("bytes") or 0)
    return rows, body, disk


def _run(
    args: argparse.Namespace, cluster: LocalRedisCluster, web: TestWebProcess, seeds: Path, nodes: int, work: Path
) -> dict[str, Any]:
    client = connect_sync(cluster.url, cluster=True)
    client.flushall(target_nodes="primaries")
    baseline = _used_memory(cluster)
    seed_cmd = [*TRAWL, "seed", str(seeds), "--redis", cluster.url, "--cluster"]
    subprocess.run([*seed_cmd, "--expected-urls", str(args.expected_urls)], check=True, capture_output=True)
    fetchers, parsers = max(1, args.fetchers // nodes), max(1, args.parsers // nodes)
    common = [
        *web.crawl_args,
        *("--redis", cluster.url, "--cluster", "--keep-running", "--progress", "off"),
        *("--delay", str(args.delay), "--include", MODEL_URLS, "--concurrency", str(args.concurrency)),
        *("--fetchers", str(fetchers), "--parsers", str(parsers)),
    ]
    outs = [work / f"{nodes}n-node{i}" for i in range(nodes)]
    procs = []
    for i, out in enumerate(outs):
        log = (work / f"{out.name}.log").open("wb")
        cmd = [*TRAWL, "node", "--out", str(out), "--node-id", f"node{i}", *common]
        procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
    try:
        time.sleep(args.warmup)
        first = _sample(cluster, client, procs, cluster.url)
        time.sleep(args.window)
        last = _sample(cluster, client, procs, cluster.url)
    finally:
        subprocess.run([*TRAWL, "stop", "--redis", cluster.url, "--cluster"], capture_output=True)
        for proc in procs:
            try:
                proc.wait(120)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    frontier = RedisFrontier.open(client, FrontierSettings(), create=False)
    counters = frontier.counters()
    memory = _used_memory(cluster) - baseline - _bloom_bytes(client)
    client.close()
    pages = max(1, last.fetched - first.fetched)
    span = last.at - first.at
    rows, body, disk = _output(outs)
    return {
        "nodes": nodes,
        "fetchers_per_node": fetchers,
        "parsers_per_node": parsers,
        "pages_per_s": pages / span,
        "pages_per_s_by_node": {k: (last.per_node.get(k, 0) - v) / span for k, v in first.per_node.items()},
        "redis_round_trips_per_page": (last.reads - first.reads) / pages,
        "redis_commands_per_page": (last.commands - first.commands) / pages,
        "redis_cpu_ms_per_page": 1000 * (last.redis_cpu - first.redis_cpu) / pages,
        "node_cpu_ms_per_page": 1000 * (last.node_cpu - first.node_cpu) / pages,
        "body_bytes_per_record": body / max(1, rows),
        "disk_bytes_per_record": disk / max(1, rows),
        "redis_bytes_per_queued_url": memory / max(1, counters.queued),
        "queued_at_end": counters.queued,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=4000)
    parser.add_argument("--warmup", type=float, default=15.0)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--fetchers", type=int, default=2, help="fetchers in total (split over the nodes)")
    parser.add_argument("--parsers", type=int, default=2, help="parsers in total (split over the nodes)")
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--delay", type=float, default=2.0)
    parser.add_argument("--expected-urls", type=int, default=2_000_000)
    parser.add_argument("--nodes", default="1,2", help="node counts to run, in this order (e.g. 2,1,2)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    results = []
    try:
        with (
            LocalRedisCluster(3) as cluster,
            TestWebProcess(WebSpec(web="synthetic", hosts=args.hosts), work / "web") as web,
        ):
            model = WebModel(
                args.hosts,
                0,
                http_port=web.ports[0],
                https_port=web.ports[1],
                options=WebOptions(corpus_fraction=1.0),
                corpus_size=int(web.info["corpus_pages"]),
            )
            if model.seeds(3) != web.info["seeds"]:
                raise RuntimeError("this model does not match the served test web")
            seeds = work / "seeds.txt"
            seeds.write_text("\n".join(model.seeds(args.hosts)) + "\n")
            for nodes in (int(n) for n in args.nodes.split(",")):
                result = _run(args, cluster, web, seeds, nodes, work)
                results.append(result)
                print(json.dumps(result, indent=1, sort_keys=True), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    head = ("nodes", "pages/s", "RTT/page", "cmds/page", "node CPU ms/page", "redis CPU ms/page")
    print("\n" + " ".join(f"{h:>{len(h) + 2}}" for h in head))
    keys = ("nodes", "pages_per_s", "redis_round_trips_per_page", "redis_commands_per_page")
    keys += ("node_cpu_ms_per_page", "redis_cpu_ms_per_page")
    for r in results:
        print(" ".join(f"{r[k]:>{len(h) + 2}.{0 if k == 'nodes' else 2}f}" for k, h in zip(keys, head, strict=True)))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
