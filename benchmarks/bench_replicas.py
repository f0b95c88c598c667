"""The cost of --redis-replicas 1 (the replica barrier, frontier/replicas.py): node CPU per page of one crawl of the
synthetic test web on a local 3-master, 3-replica Redis Cluster, with and without it, best of ``ROUNDS`` each.

Node CPU is the user + system time of the whole ``trawl crawl`` process tree (supervisor, fetcher, parser), not the
Redis servers'. Run: ``PYTHONPATH=src:testweb/src python benchmarks/bench_replicas.py``.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis.cluster

from webtrawl_testweb import TestWeb, WebOptions
from webtrawl_testweb.local_cluster import LocalRedisCluster

ROUNDS = 2


def crawl(web: TestWeb, cluster: LocalRedisCluster, extra: list[str], tag: str) -> float:
    """Node CPU seconds per page of one crawl."""
    client = redis.cluster.RedisCluster.from_url(cluster.url)
    client.flushall(target_nodes=redis.cluster.RedisCluster.PRIMARIES)
    client.close()
    out = Path(tempfile.mkdtemp(prefix=f"replica-barrier-{tag}-")) / "out"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    cmd = [
        *(sys.executable, "-m", "webtrawl", "crawl", *web.seeds(3), *web.crawl_args()),
        *("--redis", cluster.url, "--cluster", "--delay", "0.2", "--robots-retry", "0.2"),
        *("--fetchers", "1", "--parsers", "1", "--out", str(out), "--progress", "off", *extra),
    ]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    pages = sum(1 for path in (out / "records").glob("*.jsonl*") for _ in path.open())
    wall = time.monotonic() - started
    print(f"{tag}: {pages} records, node CPU {cpu:.2f}s ({1000 * cpu / pages:.2f} ms/page), wall {wall:.1f}s")
    return cpu / pages


def main() -> None:
    options = WebOptions(corpus_fraction=0.0, crawl_delay=0.5)
    with TestWeb(240, 7, options=options) as web, LocalRedisCluster(3, replicas=1) as cluster:
        off, on = [], []
        for _ in range(ROUNDS):
            off.append(crawl(web, cluster, [], "off"))
            on.append(crawl(web, cluster, ["--redis-replicas", "1"], "replicas=1"))
    cost = min(on) - min(off)
    print(f"barrier cost: {1000 * cost:.3f} ms/page = {100 * cost / min(off):.1f}% of node CPU (best of {ROUNDS})")


if __name__ == "__main__":
    main()
