"""The parser process: pages in -> outputs written -> links added -> URLs completed.

Work is batched (a few dozen pages or 50 milliseconds) so that one batch costs two Redis round trips; what one
batch does, in the order that makes crashes harmless, is :mod:`webtrawl.parse.batch`.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import TYPE_CHECKING

from webtrawl.addrpolicy import AddressPolicy
from webtrawl.config import CrawlConfig
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.heap import HeapTrimmer
from webtrawl.messages import Page
from webtrawl.pagepipe import PageReceiver
from webtrawl.parse.args import ParserArgs
from webtrawl.parse.batch import PageBatches
from webtrawl.parse.process import ParseContext
from webtrawl.parse.scope import Scope
from webtrawl.parse.simhash import NearDuplicateIndex
from webtrawl.parse.traps import TrapGuard
from webtrawl.store import SinkContext
from webtrawl.store.registry import open_outputs
from webtrawl.store.sinkurl import crawl_id

if TYPE_CHECKING:
    from webtrawl.extract import Extraction

log = logging.getLogger("webtrawl.parse")

_BATCH_PAGES = 32
_BATCH_SECONDS = 0.05  # at ~100 pages/s per parser a batch of a few pages: 2 round trips for all of them


def _extraction(cfg: CrawlConfig) -> Extraction | None:
    """The extraction stage only when asked for: its libraries (parsel, lxml) are tens of MiB per parser."""
    if not cfg.extracting():
        return None
    from webtrawl.extract import build_extraction

    return build_extraction(cfg)


def run_parser(args: ParserArgs) -> None:
    """Process entry point."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when we stop
    _Parser(args).run()


def build_context(cfg: CrawlConfig, seeds: list[str]) -> ParseContext:
    policy = AddressPolicy(cfg.ip_allow, cfg.ports)
    return ParseContext(
        limits=cfg.limits,
        politeness=cfg.politeness,
        product_token=cfg.product_token,
        scope=Scope(cfg.scope, seeds, cfg.include, cfg.exclude),
        url_allowed=policy.url_allowed,
        traps=TrapGuard(cfg.limits.max_path_repeats, cfg.limits.max_query_variants),
        extraction=_extraction(cfg),
        sitemaps=cfg.sitemaps,
        requisites=cfg.requisites,
        near_duplicates=cfg.near_duplicates or cfg.skip_near_duplicates,
        recrawl_after=cfg.recrawl_after,
    )


class _Parser:
    def __init__(self, args: ParserArgs) -> None:
        self.args = args
        cfg = args.cfg
        self.ctx = build_context(cfg, args.seeds)
        client = connect_sync(args.redis_url, cluster=cfg.cluster)
        settings = FrontierSettings.from_config(cfg)
        self.frontier = RedisFrontier.open(client, settings)
        prefix = f"{cfg.node_id}-p{args.index}"
        crawl = crawl_id(settings.prefix, self.frontier.meta())  # the same on every node: part of table keys
        sink_ctx = SinkContext(args.out_dir, prefix, crawl, cfg.jsonl_chunk, cfg.warc_max_bytes)
        self.output = open_outputs(cfg, sink_ctx, args.disk_full)
        self.receiver = PageReceiver(args.socket_path)
        neardup = None
        if self.ctx.near_duplicates:
            neardup = NearDuplicateIndex(self.frontier.client, settings.prefix, self.frontier.shards)
        self.batches = PageBatches(cfg, self.ctx, self.frontier, self.output, neardup)

    def run(self) -> None:
        pending: list[Page] = []
        first_at = 0.0
        trimmer = HeapTrimmer()
        try:
            while True:
                wait = max(0.0, first_at + _BATCH_SECONDS - time.monotonic()) if pending else 0.2
                pages = self.receiver.poll(timeout=wait)
                if pages and not pending:
                    first_at = time.monotonic()
                pending.extend(pages)
                due = len(pending) >= _BATCH_PAGES or (pending and time.monotonic() - first_at >= _BATCH_SECONDS)
                if pending and due:
                    self.batches.process(pending)
                    pending = []
                    trimmer.maybe_trim()  # a batch may have held several 10 MiB bodies and their trees
                elif not pending and self.args.fetchers_done.is_set() and self.receiver.connections == 0:
                    break
        finally:
            self.receiver.close()
            self.output.close()
