"""CPU cost of the parser -> frontier add path per page, on the 181 real corpus pages.

Per page, in one process (the links of each page are extracted beforehand: the HTML parse is not measured here):

Pages: the 181 real corpus pages (each of another site), or with ``--web`` the first 1000 corpus-backed pages of
the bench's test web (the corpus pages with the model's links inserted, many pages per host, its crawl's scope), or
with ``--realistic`` 1000 pages of the realistic web in the order one parser of ``trawl bench --web realistic`` gets
them, every link followed (benchmarks/_realistic.py: ~90 URLs kept a page, links to many hosts).

* ``links``: :func:`webtrawl.parse.links.follow_links` (canonicalization, per-page de-duplication, scope,
  address policy, trap checks) turning the page's hrefs into NewUrls;
* ``args``: the add.lua arguments of those NewUrls (:class:`webtrawl.frontier.adding.AddBatch`: host runs,
  Bloom hashes, the per-process recent set), without Redis; every URL then counts as added;
* with ``--redis``: the same adds through a real RedisFrontier on a private redis-server, ``redis_us`` the
  server's CPU (its process's user + system time) and ``client`` this process's CPU per page;
  ``redis us (seen)``: the same links added again by a second frontier client (another parser: its own recent
  set), so that every URL reaches Redis and is seen there.

The pages are visited in corpus order, as one parser would, so links repeated across pages of a site meet the
recent set. Rounds alternate between this tree and ``--baseline REF`` (ABAB..., each a fresh process); medians::

    PYTHONPATH=src:testweb/src .venv/bin/python benchmarks/bench_add_cost.py --rounds 7 --baseline main [--redis]
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

_HERE = Path(__file__).resolve().parent
_WEB_PAGES = 1000
_PASSES = 4


def _child(redis_url: str, web: bool, expected_urls: int, realistic: bool = False) -> dict[str, float]:
    sys.path.insert(0, str(_HERE))
    from bench_parse import _DEFAULT_CORPUS, load_pages, load_web_pages, make_context, make_web_context

    from webtrawl.config import Limits
    from webtrawl.frontier.adding import AddBatch
    from webtrawl.frontier.keys import shard_of
    from webtrawl.frontier.recent import RecentUrls
    from webtrawl.parse.html import extract
    from webtrawl.parse.links import follow_links
    from webtrawl.parse.traps import TrapGuard

    if realistic:
        from _realistic import crawl_order, realistic_context, realistic_web

        site = realistic_web(_DEFAULT_CORPUS)
        pages, ctx = crawl_order(site, _WEB_PAGES), realistic_context(site)
        links = [extract(page.body, "webtrawl").links for page in pages]
    elif web:  # the bench's test web: corpus pages with the model's links, in its crawl's scope
        pages = load_web_pages(_DEFAULT_CORPUS, _WEB_PAGES)
        links = [extract(page.body, "webtrawl").links for page in pages]
        ctx = make_web_context()
    else:
        pages = load_pages(_DEFAULT_CORPUS)
        links = [extract(gzip.decompress(page.body), "webtrawl").links for page in pages]
        limits = Limits()
        ctx = dataclasses.replace(make_context(), traps=TrapGuard(limits.max_path_repeats, limits.max_query_variants))
    cpu = time.process_time()
    new_urls = [follow_links(p, ctx, p.lease.url, hrefs, {}, []) for p, hrefs in zip(pages, links, strict=True)]
    links_ms = (time.process_time() - cpu) * 1000 / len(pages)
    recent = RecentUrls(100_000)

    def _shard(host: str) -> int:
        return shard_of(host, 4)

    cpu = time.process_time()
    for urls in new_urls:
        batch = AddBatch(_shard, recent, len(urls))
        batch.extend(urls)
        for segments in batch.calls(False):
            for seg in segments:
                seg.args("x")
            recent.remember_all(url for seg in segments for url in seg.urls())
    args_ms = (time.process_time() - cpu) * 1000 / len(pages)
    out = {
        "links ms": links_ms,
        "args ms": args_ms,
        "urls/page": sum(map(len, new_urls)) / len(pages),
        "links/page": sum(map(len, links)) / len(pages),
    }
    if redis_url:
        out.update(_redis(redis_url, new_urls, expected_urls))
    return out


def _redis(url: str, new_urls: Sequence[Sequence[Any]], expected_urls: int) -> dict[str, float]:
    """Each pass ``_PASSES`` times (the server's CPU time is counted in 10 ms ticks): into a fresh crawl, all new,
    then by ``_PASSES`` more frontier clients (other parsers, each its own recent set) into the last one, all seen."""
    from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync

    client = connect_sync(url)
    pages = _PASSES * len(new_urls)
    before, cpu = _server_us(client), time.process_time()
    for _ in range(_PASSES):
        settings = FrontierSettings(prefix=f"b{uuid.uuid4().hex[:8]}", shards=4, expected_urls=expected_urls)
        frontier = RedisFrontier.open(client, settings)
        for urls in new_urls:
            frontier.add(urls)
    client_ms = (time.process_time() - cpu) * 1000 / pages
    redis_us = (_server_us(client) - before) / pages
    others = [RedisFrontier.open(client, settings) for _ in range(_PASSES)]
    before = _server_us(client)
    for other in others:
        for urls in new_urls:
            other.add(urls)
    seen_us = (_server_us(client) - before) / pages
    client.flushall()
    return {"redis us": redis_us, "redis us (seen)": seen_us, "client add ms": client_ms}


def _server_us(client: object) -> float:
    """The server's CPU time in us (user + system of its process: INFO commandstats usec is wall time inside the
    command, which a loaded machine inflates by preemption; nothing else runs on this private server)."""
    pid = int(client.info("server")["process_id"])  # type: ignore[attr-defined]
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system) * 1e6


def _show(name: str, medians: dict[str, float]) -> None:
    print(f"{name:>12}: " + ", ".join(f"{k} {v:.3f}" for k, v in medians.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", default="", help="git revision to alternate with (e.g. main)")
    ap.add_argument("--redis", action="store_true", help="also add through a real redis-server")
    ap.add_argument("--web", action="store_true", help="the first 1000 corpus-backed pages of the bench's test web")
    ap.add_argument("--realistic", action="store_true", help="1000 pages of the realistic web in a parser's order")
    ap.add_argument(
        "--expected-urls", type=int, default=1_000_000, help="the crawl's: 10000000 makes a node-sized seen filter"
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--redis-url", default="", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.redis_url, args.web, args.expected_urls, args.realistic)))
        return 0
    sys.path.insert(0, str(_HERE))
    from _abab import run

    from webtrawl.node.redis_server import EmbeddedRedis

    with tempfile.TemporaryDirectory(prefix="bench-add-") as tmp:
        server = EmbeddedRedis(Path(tmp)).start() if args.redis else None
        try:
            extra = (["--redis-url", server.url] if server is not None else []) + (["--web"] if args.web else [])
            extra += ["--realistic"] if args.realistic else []
            extra += ["--expected-urls", str(args.expected_urls)]
            run(Path(__file__), args.baseline, args.rounds, extra, _show)
        finally:
            if server is not None:
                server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
