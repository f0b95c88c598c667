"""The parser process: pages in -> records written -> links added -> URLs completed.

Work is batched (a few dozen pages or 50 milliseconds) so that one batch costs two Redis round trips, and the
order inside a batch is what makes crashes harmless: records are written and flushed to the OS first, then the
outlinks are added, and only then are the URLs completed. A crash anywhere before ``complete`` leaves the URL leased,
so it is fetched again (a duplicate record at worst, never a lost one); after ``complete`` everything is on disk.
"""

from __future__ import annotations

import logging
import multiprocessing.synchronize
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from webtrawl.config import CrawlConfig
from webtrawl.fetch.addrpolicy import AddressPolicy
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.messages import Completion, NewUrl, Page
from webtrawl.pagepipe import PageReceiver
from webtrawl.parse.output import Output
from webtrawl.parse.process import ParseContext, process_page
from webtrawl.parse.scope import Scope
from webtrawl.parse.traps import TrapGuard
from webtrawl.redact import redact

log = logging.getLogger("webtrawl.parse")

_BATCH_PAGES = 32
_BATCH_SECONDS = 0.05  # at ~100 pages/s per parser a batch of a few pages: 2 round trips for all of them


@dataclass
class ParserArgs:
    cfg: CrawlConfig
    index: int
    redis_url: str
    socket_path: Path
    out_dir: Path
    seeds: list[str]  # for the host/domain scope
    fetchers_done: multiprocessing.synchronize.Event
    disk_full: multiprocessing.synchronize.Event | None = None  # set while a write waits for disk space


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
    )


class _Parser:
    def __init__(self, args: ParserArgs) -> None:
        self.args = args
        cfg = args.cfg
        self.ctx = build_context(cfg, args.seeds)
        client = connect_sync(args.redis_url, cluster=cfg.cluster)
        self.frontier = RedisFrontier.open(client, FrontierSettings.from_config(cfg))
        prefix = f"{cfg.node_id}-p{args.index}"
        self.output = Output(
            args.out_dir,
            prefix,
            chunk=cfg.jsonl_chunk,
            warc_max_bytes=cfg.warc_max_bytes if cfg.warc else None,
            pause=args.disk_full,
        )
        self.receiver = PageReceiver(args.socket_path)

    def run(self) -> None:
        pending: list[Page] = []
        first_at = 0.0
        try:
            while True:
                wait = max(0.0, first_at + _BATCH_SECONDS - time.monotonic()) if pending else 0.2
                pages = self.receiver.poll(timeout=wait)
                if pages and not pending:
                    first_at = time.monotonic()
                pending.extend(pages)
                due = len(pending) >= _BATCH_PAGES or (pending and time.monotonic() - first_at >= _BATCH_SECONDS)
                if pending and due:
                    self._process(pending)
                    pending = []
                elif not pending and self.args.fetchers_done.is_set() and self.receiver.connections == 0:
                    break
        finally:
            self.receiver.close()
            self.output.close()

    def _process(self, pages: list[Page]) -> None:
        new_urls: list[NewUrl] = []
        parents: dict[str, Page] = {}
        completions: list[Completion] = []
        for page in pages:
            try:
                out = process_page(page, self.ctx)
            except Exception:  # a parser bug must not lose the URL: record it and move on
                log.exception("processing %s failed", redact(page.lease.url))
                record = {"url": page.lease.url, "status": page.status, "error": "parse-bug"}
                self.output.record(record)
                completions.append(Completion(page.lease.token, page.lease.shard, {"err:parse-bug": 1}))
                continue
            self.output.store(page, out)  # waits (crawl paused) while the disk is full
            new_urls.extend(out.new_urls)
            for new in out.new_urls:
                parents.setdefault(new.url, page)
            completions.append(Completion(page.lease.token, page.lease.shard, out.counters))
        if new_urls:
            result = self.frontier.add(new_urls)
            refused = []  # host-queue-cap, budget, frontier-cap: recorded like any drop, in one write
            for url, reason in result.refused:
                parent = parents.get(url)
                depth = parent.lease.depth + 1 if parent is not None else 0
                refused.append((url, reason, parent.lease.url if parent is not None else "", depth))
            self.output.drop_many(refused)
        self.frontier.complete(completions)
