"""The parser process: pages in -> outputs written -> links added -> URLs completed.

Work is batched (a few dozen pages or 50 milliseconds) so that one batch costs two Redis round trips; what one
batch does, in the order that makes crashes harmless, is :mod:`webtrawl.parse.batch`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from webtrawl.addrpolicy import AddressPolicy
from webtrawl.config import DiscoveryOptions, ExtractionOptions, FetchOptions, Limits, Politeness
from webtrawl.errors import RedisUnavailable
from webtrawl.formats.sinkurl import crawl_id
from webtrawl.frontier import RedisFrontier, connect_sync
from webtrawl.frontier.replicas import replicas_of
from webtrawl.frontier.retry import Outage, open_waiting
from webtrawl.heap import PARSER_MMAP_THRESHOLD, HeapTrimmer, collect_less, return_freed_buffers
from webtrawl.messages import Page
from webtrawl.pagepipe import PageReceiver
from webtrawl.parse.args import ParserArgs, warcinfo_fields
from webtrawl.parse.batch import PageBatches
from webtrawl.parse.columns import RedisColumnTypes
from webtrawl.parse.fence import keep_margin
from webtrawl.parse.process import ParseContext
from webtrawl.parse.scope import Scope
from webtrawl.parse.settle import settle
from webtrawl.parse.simhash import NearDuplicateIndex
from webtrawl.parse.traps import TrapGuard
from webtrawl.store import SinkContext
from webtrawl.store.batchlog import DIRECTORY as BATCH_LOGS
from webtrawl.store.batchlog import BatchLog
from webtrawl.store.registry import open_outputs

if TYPE_CHECKING:
    from webtrawl.extract import Extraction
    from webtrawl.parse.tracking import ContentTracker

log = logging.getLogger("webtrawl.parse")

_BATCH_PAGES = 32
_BATCH_SECONDS = 0.05  # at ~100 pages/s per parser a batch of a few pages: 2 round trips for all of them
_STOP_AWAY_S = 1.0  # stopping, a Redis away this long is not waited for: the node would kill us (batchlog.py)


def _extraction(opts: ExtractionOptions) -> Extraction | None:
    """The extraction stage only when asked for: its libraries (parsel, lxml) are tens of MiB per parser."""
    if not opts.enabled():
        return None
    from webtrawl.extract import build_extraction

    return build_extraction(opts)


def _tracker(args: ParserArgs, client: Any, prefix: str) -> ContentTracker | None:
    """--chunks / --changes: the rows of each batch, from the state each page had (only with --recrawl-after)."""
    ext = args.extraction
    if not ext.chunks and not ext.changes:
        return None
    from webtrawl.parse.tracking import ContentTracker

    return ContentTracker(
        client,
        prefix,
        chunk_size=ext.chunks,
        changes=ext.changes,
        keep_state=args.discovery.recrawl_after > 0,
        announce_new=args.announce_new,
        links=ext.changes_links,
    )


def run_parser(args: ParserArgs) -> None:
    """Process entry point."""
    tune_process()
    try:
        _Parser(args).run()
    except RedisUnavailable:  # a stop while Redis is away (_Parser): what this life held is redone as after a kill
        if not args.fetchers_done.is_set():
            raise
        log.info("parser %d: stopped while Redis was away; its batches are completed on the next start", args.index)


def tune_process() -> None:
    """A parser process's cyclic-GC and glibc heap settings (bench_parser_heap.py replays a parser with them)."""
    collect_less()
    return_freed_buffers(PARSER_MMAP_THRESHOLD)


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
    built = _extraction(extraction)
    allowed = built.allowed_domains() if built is not None else ()
    return ParseContext(
        limits=limits,
        politeness=politeness,
        product_token=fetch.product_token,
        scope=Scope(discovery.scope, seeds, discovery.include, discovery.exclude, allowed),
        url_allowed=policy.url_allowed,
        traps=TrapGuard(limits.max_path_repeats, limits.max_query_variants),
        extraction=built,
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

        # A Redis that is away (restart, failover) is waited for, but not once the node stops (the fetchers are done)
        # and it has been away for a while: the node would kill us, with an ERROR line. Giving up is as safe as that
        # kill: a batch logged ready is completed on the next start (settle), the rest is leased and fetched again.
        def stopping() -> bool:
            away = outage.down_since is not None and time.monotonic() - outage.down_since >= _STOP_AWAY_S
            return away and args.fetchers_done.is_set()

        outage = Outage(f"parser {args.index}", stop=stopping)

        def opened() -> RedisFrontier:
            client = connect_sync(args.redis_url, cluster=args.cluster)
            return RedisFrontier.open(client, settings, outage=outage)

        self.frontier = open_waiting(opened, outage)
        # a page's links are on N replicas before it is completed (N: --redis-replicas, or what Redis has)
        self.frontier.replicas = open_waiting(lambda: replicas_of(self.frontier.client, settings.replicas), outage)
        prefix = f"{args.node_id}-p{args.index}"
        # the watermark (resend.py): a call sent again after a lost reply is not stale; with replicas a failover may
        # lose completions, which are then sent again
        self.frontier.keep_completions(prefix, resend=self.frontier.replicas > 0)
        meta = self.frontier.meta()
        crawl = crawl_id(settings.prefix, meta)  # the same on every node: part of table keys
        out = args.output
        columns = RedisColumnTypes(self.frontier.client, settings.prefix)  # every node's files typed alike
        sink_ctx = SinkContext(
            args.out_dir,
            prefix,
            crawl,
            out.jsonl_chunk,
            out.warc_max_bytes,
            out.encrypt_to,
            columns=columns,
            warcinfo=warcinfo_fields(args.fetch, crawl),
            stamp=str(meta.get("stamp", "")),
        )
        # listening before the batch log is settled: a restarted fetcher's barrier then waits for it (pagesend.py)
        self.receiver = PageReceiver(args.socket_path)
        neardup = None
        if self.ctx.near_duplicates:
            neardup = NearDuplicateIndex(self.frontier.client, settings.prefix, self.frontier.shards)
        tracker = _tracker(args, self.frontier.client, settings.prefix)
        log_path = args.out_dir / BATCH_LOGS / f"{prefix}.log"
        # a batch its killed previous life left: settled before the outputs open, as they seal what is left open
        settle(log_path, self.frontier, neardup, tracker.save if tracker else None)
        ext = args.extraction
        self.output = open_outputs(
            args.output, ext.extracts_items(), sink_ctx, args.disk_full, chunks=ext.chunks > 0, changes=ext.changes
        )
        self.batch_log = BatchLog(log_path)
        margin = keep_margin(settings.process_ttl_ms / 1000)
        self.batches = PageBatches(
            args.discovery,
            self.ctx,
            self.frontier,
            self.output,
            neardup,
            tracker,
            margin,
            self.batch_log,
            self.receiver.acknowledge,  # the fetchers keep the leases of pages not yet stored or logged as ready
        )

    _stop_asked = False  # CloseSpider: the stop was asked (once)

    def run(self) -> None:
        pending: list[Page] = []
        first_at = 0.0
        trimmer = HeapTrimmer()
        abandoned = False
        try:
            while True:
                wait = max(0.0, first_at + _BATCH_SECONDS - time.monotonic()) if pending else 0.2
                pages = self.receiver.poll(timeout=wait)
                if pages and not pending:
                    first_at = time.monotonic()
                pending.extend(pages)
                asked = self.receiver.asked  # a restarted fetcher waits for what its previous life sent us
                due = len(pending) >= _BATCH_PAGES or (pending and time.monotonic() - first_at >= _BATCH_SECONDS)
                if pending and (due or asked):
                    self.batches.process(pending)  # tells the fetchers once the batch is logged as ready
                    pending = []
                    self._close_if_asked()
                    trimmer.maybe_trim()  # a batch may have held several 10 MiB bodies and their trees
                elif not pending and self.args.fetchers_done.is_set() and self.receiver.connections == 0:
                    break
                elif not pending and not self.args.fetchers_done.is_set():  # stopping: no read that may stall
                    self.frontier.check_completions()  # a failover met by nobody here may have lost some
                if asked:
                    self.receiver.answer()
        except Exception:  # a stop while Redis is away (stopping() above), a sink's failure: maybe mid-batch
            abandoned = True
            raise
        finally:
            self.receiver.close()
            if not abandoned:  # else left as a kill leaves them: a begun batch's rows are cut back (batchlog.py),
                # where closing would seal them in (a resume then doubled them)
                self.output.close()
            self.batch_log.close()
            if self.ctx.extraction is not None:
                self.ctx.extraction.close(self._end_reason())

    def _close_if_asked(self) -> None:
        """A callback raised CloseSpider: once its page is stored, every node is asked to drain, as trawl stop does."""
        extraction = self.ctx.extraction
        if extraction is not None and extraction.closed_by and not self._stop_asked:
            self._stop_asked = True
            self.frontier.request_stop()

    def _end_reason(self) -> str:
        """Scrapy's close reason for a spider's ``closed``: a CloseSpider's, or ``finished`` when the crawl has
        nothing left. Asked once: a parser that ends while Redis is away must not wait for it (the node kills parsers
        that do)."""
        if self.ctx.extraction is not None and self.ctx.extraction.closed_by:
            return self.ctx.extraction.closed_by
        try:
            return "finished" if self.frontier.finished_now() else "shutdown"
        except Exception:  # a reply no frontier call expects: the crawl was not seen to finish
            return "shutdown"
