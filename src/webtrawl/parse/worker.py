"""The parser process: pages in -> outputs written -> links added -> URLs completed.

Work is batched (a few dozen pages or 50 milliseconds) so that one batch costs two Redis round trips, and the
order inside a batch is what makes crashes harmless: the batch's outputs (WARC, records, items, dropped links and
whatever other sinks the config names) are written and flushed by the store's fan-out first, then the outlinks are
added, and only then are the URLs completed. A crash anywhere before ``complete`` leaves the URL leased, so it is
fetched again (a duplicate record at worst, never a lost one); after ``complete`` everything is durable.
"""

from __future__ import annotations

import logging
import signal
import time
from typing import TYPE_CHECKING

from webtrawl.addrpolicy import AddressPolicy
from webtrawl.config import DiscoveryOptions, ExtractionOptions, FetchOptions, Limits, Politeness
from webtrawl.frontier import RedisFrontier, connect_sync
from webtrawl.frontier.retry import Outage, open_waiting
from webtrawl.heap import HeapTrimmer
from webtrawl.messages import Completion, NewUrl, Page
from webtrawl.names import DROP_PREFIX, NEAR_DUPLICATE, counter_for
from webtrawl.pagepipe import PageReceiver
from webtrawl.parse.args import ParserArgs
from webtrawl.parse.output import PARSE_BUG, page_output, parse_bug_output
from webtrawl.parse.process import ParseContext, Processed, process_page
from webtrawl.parse.recrawl import next_state
from webtrawl.parse.scope import Scope
from webtrawl.parse.simhash import NearDuplicateIndex
from webtrawl.parse.traps import TrapGuard
from webtrawl.redact import redact
from webtrawl.store import Drop, PageOutput, SinkContext
from webtrawl.store.files import WarcSink
from webtrawl.store.registry import open_outputs
from webtrawl.store.sinks import crawl_id

if TYPE_CHECKING:
    from webtrawl.extract import Extraction

log = logging.getLogger("webtrawl.parse")

_BATCH_PAGES = 32
_BATCH_SECONDS = 0.05  # at ~100 pages/s per parser a batch of a few pages: 2 round trips for all of them


def _extraction(opts: ExtractionOptions) -> Extraction | None:
    """The extraction stage only when asked for: its libraries (parsel, lxml) are tens of MiB per parser."""
    if not opts.enabled():
        return None
    from webtrawl.extract import build_extraction

    return build_extraction(opts)


def run_parser(args: ParserArgs) -> None:
    """Process entry point."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when we stop
    _Parser(args).run()


def build_context(
    seeds: list[str],
    *,
    fetch: FetchOptions,
    limits: Limits,
    politeness: Politeness,
    discovery: DiscoveryOptions,
    extraction: ExtractionOptions,
) -> ParseContext:
    policy = AddressPolicy(fetch.ip_allow, fetch.ports)
    return ParseContext(
        limits=limits,
        politeness=politeness,
        product_token=fetch.product_token,
        scope=Scope(discovery.scope, seeds, discovery.include, discovery.exclude),
        url_allowed=policy.url_allowed,
        traps=TrapGuard(limits.max_path_repeats, limits.max_query_variants),
        extraction=_extraction(extraction),
        sitemaps=discovery.sitemaps,
        requisites=discovery.requisites,
        near_duplicates=discovery.near_duplicates or discovery.skip_near_duplicates,
        recrawl_after=discovery.recrawl_after,
    )


class _Parser:
    def __init__(self, args: ParserArgs) -> None:
        self.args = args
        self.ctx = build_context(
            args.seeds,
            fetch=args.fetch,
            limits=args.limits,
            politeness=args.politeness,
            discovery=args.discovery,
            extraction=args.extraction,
        )
        settings = args.frontier
        # A Redis that is away (restart, failover) is waited for; the supervisor bounds a stop by killing us.
        outage = Outage(f"parser {args.index}")

        def opened() -> RedisFrontier:
            client = connect_sync(args.redis_url, cluster=args.cluster)
            return RedisFrontier.open(client, settings, outage=outage)

        self.frontier = open_waiting(opened, outage)
        prefix = f"{args.node_id}-p{args.index}"
        crawl = crawl_id(settings.prefix, self.frontier.meta())  # the same on every node: part of table keys
        sink_ctx = SinkContext(args.out_dir, prefix, crawl, args.output.jsonl_chunk, args.output.warc_max_bytes)
        self.output = open_outputs(args.output, args.extraction.extracts_items(), sink_ctx, args.disk_full)
        self.archives = self.output.has(WarcSink)
        self.receiver = PageReceiver(args.socket_path)
        self.neardup: NearDuplicateIndex | None = None
        if self.ctx.near_duplicates:
            self.neardup = NearDuplicateIndex(self.frontier.client, settings.prefix, self.frontier.shards)

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
                    self._process(pending)
                    pending = []
                    trimmer.maybe_trim()  # a batch may have held several 10 MiB bodies and their trees
                elif not pending and self.args.fetchers_done.is_set() and self.receiver.connections == 0:
                    break
        finally:
            self.receiver.close()
            self.output.close()

    def _process(self, pages: list[Page]) -> None:
        new_urls: list[NewUrl] = []
        parents: dict[str, Page] = {}
        outputs: list[PageOutput] = []
        completions: list[Completion] = []
        processed: list[tuple[Page, Processed]] = []
        for page in pages:
            try:
                processed.append((page, process_page(page, self.ctx)))
            except Exception as exc:  # a parser bug must not lose the URL: record it and move on
                log.exception("processing %s failed", redact(page.lease.url))
                outputs.append(parse_bug_output(page, exc))
                completions.append(Completion(page.lease.token, page.lease.shard, {counter_for(PARSE_BUG): 1}))
        hashed = self._near_duplicates(processed) if self.neardup is not None else []
        for page, out in processed:
            outputs.append(page_output(page, out))
            counters = out.counters
            if self.archives and out.warc:
                counters["warc"] = counters.get("warc", 0) + 1
            counters["stored"] = counters.get("stored", 0) + 1
            new_urls.extend(out.new_urls)
            for new in out.new_urls:
                parents.setdefault(new.url, page)
            completions.append(self._completion(page, out, counters))
        self.output.write(outputs)  # waits (crawl paused) while the disk is full or an output is away
        hints = [hint for _, out in processed for hint in out.hints]
        if hints:  # before the URLs: a new one is in the recrawl set with its hint before any fetcher leases it
            self.frontier.recrawl_hints(hints)
        if new_urls:
            result = self.frontier.add(new_urls)
            refused = []  # host-queue-cap, budget, frontier-cap: recorded like any drop, in one write
            for url, reason in result.refused:
                parent = parents.get(url)
                depth = parent.lease.depth + 1 if parent is not None else 0
                refused.append(Drop(url, reason, parent.lease.url if parent is not None else "", depth))
            self.output.write_drops(refused)
        if hashed and self.neardup is not None:
            self.neardup.add(hashed)  # before complete: a page completed is always in the index
        self.frontier.complete(completions)

    def _completion(self, page: Page, out: Processed, counters: dict[str, int]) -> Completion:
        """The URL's completion; with --recrawl-after it also (re)enters the recrawl set, in the same step."""
        lease = page.lease
        if self.args.discovery.recrawl_after > 0:
            base = self.ctx.recrawl_base(lease.url, out.record.content_type or "")
            state, due_ms = next_state(page, out.record, base)
            if state:
                return Completion(lease.token, lease.shard, counters, lease.url, state, due_ms)
        return Completion(lease.token, lease.shard, counters)

    def _near_duplicates(self, processed: list[tuple[Page, Processed]]) -> list[tuple[str, int]]:
        """Flag pages within 3 bits of an earlier page (the shared index, or earlier in this batch); with
        --skip-near-duplicates their links are dropped. Returns the (url, simhash) of the pages to file."""
        assert self.neardup is not None
        hashed = [
            (i, page.lease.url, int(out.record.simhash, 16))
            for i, (page, out) in enumerate(processed)
            if isinstance(out.record.simhash, str)
        ]
        found = self.neardup.find([(url, value) for _, url, value in hashed])
        for (i, _, _), original in zip(hashed, found, strict=True):
            if original is None:
                continue
            out = processed[i][1]
            out.record.near_duplicate_of = original
            out.counters["near-duplicates"] = 1
            if self.args.discovery.skip_near_duplicates and out.new_urls:
                out.counters[DROP_PREFIX + NEAR_DUPLICATE] = len(out.new_urls)
                out.dropped.extend((new.url, NEAR_DUPLICATE) for new in out.new_urls)
                out.new_urls = []
                out.record.outlinks = 0
        return [(url, value) for _, url, value in hashed]
