"""The parser process: pages in -> records written -> links added -> URLs completed.

Work is batched (a few dozen pages or a few milliseconds) so that one batch costs two Redis round trips, and the
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
from webtrawl.parse.process import ParseContext, process_page
from webtrawl.parse.scope import Scope
from webtrawl.store import JsonlWriter, WarcWriter

log = logging.getLogger("webtrawl.parse")

_BATCH_PAGES = 32
_BATCH_SECONDS = 0.01


@dataclass
class ParserArgs:
    cfg: CrawlConfig
    index: int
    redis_url: str
    socket_path: Path
    out_dir: Path
    seeds: list[str]  # for the host/domain scope
    fetchers_done: multiprocessing.synchronize.Event


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
    )


class _Parser:
    def __init__(self, args: ParserArgs) -> None:
        self.args = args
        cfg = args.cfg
        self.ctx = build_context(cfg, args.seeds)
        client = connect_sync(args.redis_url, cluster=cfg.cluster)
        self.frontier = RedisFrontier.open(client, FrontierSettings.from_config(cfg))
        prefix = f"{cfg.node_id}-p{args.index}"
        self.records = JsonlWriter(args.out_dir / "records", prefix, cfg.jsonl_chunk)
        self.warc = WarcWriter(args.out_dir / "warc", prefix, cfg.warc_max_bytes) if cfg.warc else None
        self.receiver = PageReceiver(args.socket_path)

    def run(self) -> None:
        pending: list[Page] = []
        first_at = 0.0
        try:
            while True:
                pages = self.receiver.poll(timeout=_BATCH_SECONDS if pending else 0.2)
                if pages and not pending:
                    first_at = time.monotonic()
                pending.extend(pages)
                due = len(pending) >= _BATCH_PAGES or (pending and time.monotonic() - first_at >= _BATCH_SECONDS)
                if pending and (due or not pages):
                    self._process(pending)
                    pending = []
                elif not pending and self.args.fetchers_done.is_set() and self.receiver.connections == 0:
                    break
        finally:
            self.receiver.close()
            self.records.close()
            if self.warc is not None:
                self.warc.close()

    def _process(self, pages: list[Page]) -> None:
        new_urls: list[NewUrl] = []
        completions: list[Completion] = []
        for page in pages:
            try:
                out = process_page(page, self.ctx)
            except Exception:  # a parser bug must not lose the URL: record it and move on
                log.exception("processing %s failed", page.lease.url)
                record = {"url": page.lease.url, "status": page.status, "error": "parse-bug"}
                self.records.write(record)
                completions.append(Completion(page.lease.token, page.lease.shard, {"err:parse-bug": 1}))
                continue
            if self.warc is not None and out.warc:
                self.warc.write(page, out.record)
                out.counters["warc"] = out.counters.get("warc", 0) + 1
            self.records.write(out.record)
            out.counters["stored"] = out.counters.get("stored", 0) + 1
            new_urls.extend(out.new_urls)
            completions.append(Completion(page.lease.token, page.lease.shard, out.counters))
        self.records.flush()
        if self.warc is not None:
            self.warc.flush()
        if new_urls:
            self.frontier.add(new_urls)
        self.frontier.complete(completions)
