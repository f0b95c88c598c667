"""The pages one parser of ``trawl bench --web realistic`` gets, in its order, without running a crawl.

A small model of the crawl: the realistic web (testweb realistic.py: 40,000 hosts, its default seeds, every link
followed), a frontier of one FIFO per host, each host fetched at most once per ``delay`` seconds, the node fetching
``rate`` pages a second, and every ``parsers``-th page going to the parser measured. Only 200 HTML answers are
kept (404s, the 12 MB pages, bombs and redirects take their turn but are not parsed here: bench_parse_cost.py
times those on their own). What matters for the link path is what this reproduces: ~140 hrefs and ~90 URLs kept
a page, links to many hosts, and few pages of one host per parser (a page's links are mostly new to it). See
benchmarks/RESULTS.md (issue 21, links21) for how it compares with the pages of a real run.
"""

from __future__ import annotations

import heapq
import time
from collections import deque
from pathlib import Path

import msgspec

from webtrawl.config import CrawlConfig, Limits
from webtrawl.errors import WebtrawlError
from webtrawl.formats.canonical import canonicalize
from webtrawl.frontier.keys import split_parts
from webtrawl.messages import Lease, Page
from webtrawl.parse import ParseContext
from webtrawl.parse.html import extract
from webtrawl.parse.worker import build_context
from webtrawl_testweb import chaosbodies
from webtrawl_testweb.corpus import Corpus
from webtrawl_testweb.realistic import RealisticWeb
from webtrawl_testweb.realpages import Templates

PORTS = (8080, 8443)
HOSTS = 40_000


def realistic_web(corpus: Path) -> RealisticWeb:
    return RealisticWeb(HOSTS, Templates(Corpus(corpus)), seed=0, http_port=PORTS[0], https_port=PORTS[1])


def realistic_context(web: RealisticWeb) -> ParseContext:
    """What a parser of ``trawl bench --web realistic`` builds: every link followed, the test web's addresses."""
    cfg = CrawlConfig().with_options(ip_allow=["127.0.0.0/8"], ports=list(PORTS))
    return build_context(
        web.seeds(),
        fetch=cfg.fetch,
        limits=cfg.limits,
        politeness=cfg.politeness,
        discovery=cfg.discovery,
        extraction=cfg.extraction,
    )


def big_pages(like: Page) -> tuple[Page, Page]:
    """The realistic web's 12 MB page (1 in 100) as a fetcher hands it over, cut at its size cap (an error whose body
    is stored; fetch/pages.py), and its gzip bomb (1 in 100), each with the lease of ``like``."""
    cut = Limits().max_body
    huge = msgspec.structs.replace(
        like,
        body=chaosbodies.huge_page(chaosbodies.HUGE_SIZE)[:cut],
        truncated=True,
        error="too-large",
        error_detail="body cut at the size cap",
        headers=[("Content-Type", "text/html")],
    )
    bomb = msgspec.structs.replace(
        like,
        body=chaosbodies.gzip_bomb(chaosbodies.BOMB_SIZE)[:cut],
        headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip")],
    )
    return huge, bomb


def crawl_order(
    web: RealisticWeb, count: int, *, parsers: int = 2, rate: float = 270.0, delay: float = 2.0
) -> list[Page]:
    """The first ``count`` HTML pages the first of ``parsers`` parsers gets (see the module docstring)."""
    queues: dict[str, deque[tuple[str, int]]] = {}
    ready: list[tuple[float, int, str]] = []  # (time the host may be fetched again, tie-break, host)
    seen: set[str] = set()
    order = 0

    def enqueue(url: str, depth: int, now: float) -> None:
        nonlocal order
        parts = split_parts(url)
        if url in seen or parts is None:
            return
        seen.add(url)
        queue = queues.get(parts[0])
        if queue is None:
            queue = queues[parts[0]] = deque()
            order += 1
            heapq.heappush(ready, (now, order, parts[0]))
        queue.append((url, depth))

    for seed in web.seeds():
        enqueue(canonicalize(seed), 0, 0.0)
    pages: list[Page] = []
    now, fetched = 0.0, 0
    while ready and len(pages) < count:
        at, tie, host = heapq.heappop(ready)
        now = max(now + 1.0 / rate, at)
        url, depth = queues[host].popleft()
        if queues[host]:
            heapq.heappush(ready, (now + delay, tie, host))
        else:
            del queues[host]
        scheme, _, rest = url.partition("://")
        slash = rest.find("/")
        reply = web.respond(scheme, host, rest[slash:])
        if reply.kind != "page":
            continue
        body = b"".join(reply.body)
        for href, _ in extract(body, "webtrawl").links:
            try:
                enqueue(canonicalize(href, url), depth + 1, now)
            except WebtrawlError:
                continue
        fetched += 1
        if fetched % parsers:
            continue
        lease = Lease(token=f"bench.0.{len(pages)}", shard=0, host=host, url=url, depth=depth)
        headers = [("Content-Type", reply.content_type), *reply.headers]
        pages.append(
            Page(lease=lease, status=200, reason="OK", headers=headers, body=body, ip="127.0.0.1",
                 fetch_time=time.time(), elapsed_ms=12.5)
        )  # fmt: skip
    return pages
