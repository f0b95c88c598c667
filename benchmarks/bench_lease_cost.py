"""Redis CPU per page of the fetch cycle: lease -> release (KEEP) -> complete, on a private redis-server.

Each child process opens fresh crawls (64 shards, the default) of ``--hosts`` hosts with ``--pages`` URLs each and
runs the cycle until every URL is completed, once leasing one host per call (a fetcher with one free slot: every
lease script call gives one lease, the most calls per page) and once up to 16 per call. Printed per page: the
server's CPU (user + system of its process, in us) and this client's (us). Rounds alternate between this tree and
``--baseline REF`` (ABAB..., each a fresh process); medians::

    PYTHONPATH=src .venv/bin/python benchmarks/bench_lease_cost.py --rounds 7 --baseline main

Written for issue 22 (lease request ids: a GET per lease script call, a SET of the reply per call that leased).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import uuid
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_BATCHES = (1, 16)


def _child(redis_url: str, hosts: int, pages: int) -> dict[str, float]:
    from bench_add_cost import _server_us

    from webtrawl.frontier import FrontierSettings, RedisFrontier, Release, UrlAction, connect_sync
    from webtrawl.messages import Completion, NewUrl

    client = connect_sync(redis_url)
    out: dict[str, float] = {}
    for per_call in _BATCHES:
        settings = FrontierSettings(prefix=f"b{uuid.uuid4().hex[:8]}", empty_poll_ms=0, host_gap_ms=0)
        f = RedisFrontier.open(client, settings)
        urls = [NewUrl(f"http://h{h}.test/p{p}") for p in range(pages) for h in range(hosts)]
        for i in range(0, len(urls), 1000):
            f.add(urls[i : i + 1000])
        done = 0
        before, cpu = _server_us(client), time.process_time()
        while leases := f.lease("bench/f0", per_call):
            f.release([Release(x.token, x.shard, x.host, UrlAction.KEEP, delay_ms=0) for x in leases])
            f.complete([Completion(x.token, x.shard, {"stored": 1}) for x in leases])
            done += len(leases)
        assert done == len(urls), (done, len(urls))
        out[f"redis us/page (lease {per_call})"] = (_server_us(client) - before) / done
        out[f"client us/page (lease {per_call})"] = (time.process_time() - cpu) * 1e6 / done
    client.flushall()
    return out


def _show(name: str, medians: dict[str, float]) -> None:
    print(f"{name:>12}: " + ", ".join(f"{k} {v:.1f}" for k, v in medians.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", default="", help="git revision to alternate with (e.g. main)")
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--pages", type=int, default=3, help="URLs per host")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--redis-url", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sys.path.insert(0, str(_HERE))
    if args.child:
        print(json.dumps(_child(args.redis_url, args.hosts, args.pages)))
        return 0
    from _abab import run

    from webtrawl.node.redis_server import EmbeddedRedis

    with tempfile.TemporaryDirectory(prefix="bench-lease-") as tmp:
        server = EmbeddedRedis(Path(tmp)).start()
        try:
            extra = ["--redis-url", server.url, "--hosts", str(args.hosts), "--pages", str(args.pages)]
            run(Path(__file__), args.baseline, args.rounds, extra, _show)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
