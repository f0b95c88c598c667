"""One batch of a parser: pages processed -> outputs written -> links added -> URLs completed.

The order is what makes crashes harmless: the batch's outputs (WARC, records, items, dropped links and whatever
other sinks the config names) are written and flushed by the store's fan-out first, then the outlinks are added,
and only then are the URLs completed. A crash anywhere before ``complete`` leaves the URL leased, so it is fetched
again, never lost; after ``complete`` everything is durable. The parser's batch log
(:mod:`webtrawl.store.batchlog`) keeps the file outputs to one record a page across such a crash: a batch killed
before its outputs and links were all done is rolled back (its files cut back, its URLs fetched again), one killed
after is rolled forward (:func:`settle`: its completions, near-duplicate entries and content states applied by the
next life, before it takes pages). Tables upsert, so they hold a page once either way. A page held past its
deadline is dropped before anything is written, and a completion that came too late anyway is discarded by the
frontier (:mod:`webtrawl.parse.fence`). The frontier and the outputs come in as objects (Redis and the configured
sinks in a parser process; in-memory ones in tests).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from webtrawl.config import DiscoveryOptions
from webtrawl.frontier import AddResult, Stale
from webtrawl.messages import Completion, NewUrl, Page, RecrawlHint
from webtrawl.names import DROP_PREFIX, GIVEN_UP, NEAR_DUPLICATE, counter_for
from webtrawl.parse.fence import overdue
from webtrawl.parse.output import PARSE_BUG, page_output, parse_bug_output
from webtrawl.parse.process import ParseContext, Processed, process_page
from webtrawl.parse.recrawl import kept_state, next_state, superseded
from webtrawl.parse.settle import FINISH_ENCODER, Finish, finish_batch
from webtrawl.parse.simhash import NearDuplicateIndex
from webtrawl.redact import redact
from webtrawl.store import Drop, FanOut, PageOutput
from webtrawl.store.batchlog import BatchLog

if TYPE_CHECKING:  # imported by parsers that chunk or track changes only
    from webtrawl.parse.tracking import ContentTracker

log = logging.getLogger("webtrawl.parse")


class BatchFrontier(Protocol):
    """What a batch asks of the frontier (``RedisFrontier``; an in-memory one in tests)."""

    def add(self, urls: Sequence[NewUrl]) -> AddResult: ...

    def complete(self, completions: Sequence[Completion]) -> list[Stale | None]: ...

    def complete_redo(self, completions: Sequence[Completion], parser: str, since: int) -> list[Stale | None]: ...

    def completion_mark(self) -> int: ...

    def recrawl_hints(self, hints: Sequence[RecrawlHint]) -> int: ...


class PageBatches:
    def __init__(
        self,
        discovery: DiscoveryOptions,
        ctx: ParseContext,
        frontier: BatchFrontier,
        output: FanOut,
        neardup: NearDuplicateIndex | None = None,
        tracker: ContentTracker | None = None,
        keep_margin: float = 0.0,
        batch_log: BatchLog | None = None,
        on_ready: Callable[[], None] = lambda: None,
    ) -> None:
        self.discovery = discovery
        self.ctx = ctx
        self.frontier = frontier
        self.output = output
        self.archives = "warc" in output.streams
        self.neardup = neardup
        self.tracker = tracker  # --chunks / --changes
        self.keep_margin = keep_margin  # what a batch needs left of a page's hold once it is processed (fence.py)
        self.batch_log = batch_log
        self.on_ready = on_ready  # the fetchers may forget these pages: a later life completes them if we die

    def process(self, pages: list[Page]) -> None:
        """Process, store, add the links of, and complete one batch of pages, in that order."""
        new_urls: list[NewUrl] = []
        parents: dict[str, Page] = {}
        outputs: list[PageOutput] = []
        completions: list[Completion] = []
        processed: list[tuple[Page, Processed]] = []
        bugs: list[tuple[Page, Exception]] = []
        for page in pages:
            try:
                processed.append((page, process_page(page, self.ctx)))
            except Exception as exc:  # a parser bug must not lose the URL: record it and move on
                log.exception("processing %s failed", redact(page.lease.url))
                bugs.append((page, exc))
        late = overdue(pages, self.keep_margin)
        if late:
            processed, bugs = self._drop_late(pages, late, processed, bugs)
        for page, error in bugs:
            outputs.append(parse_bug_output(page, error))
            lease, counters = page.lease, {counter_for(PARSE_BUG): 1}
            state, due_ms = kept_state(page) if self.discovery.recrawl_after > 0 else ("", 0)  # still watched
            completions.append(
                Completion(lease.token, lease.shard, counters, lease.url if state else "", state, due_ms)
            )
        hashed = self._near_duplicates(processed) if self.neardup is not None else []
        unhashed: list[tuple[str, int]] = []
        states = self.tracker.apply(processed) if self.tracker is not None else []
        for page, out in processed:
            outputs.append(page_output(page, out))
            counters = out.counters
            if self.archives and out.warc:
                counters["warc"] = counters.get("warc", 0) + 1
            counters["stored"] = counters.get("stored", 0) + 1
            if page.given_up:
                counters[GIVEN_UP] = 1
            new_urls.extend(out.new_urls)
            for new in out.new_urls:
                parents.setdefault(new.url, page)
            completions.append(completion := self._completion(page, out, counters))
            old = superseded(page.recrawl, completion.recrawl) if self.neardup is not None else None
            if old is not None:  # the copy it was filed as is no more: one entry per URL in the index
                unhashed.append((page.lease.url, old))
        if self.batch_log is not None:
            self.output.durably(self.batch_log.name, functools.partial(self.batch_log.begin, self.output.marks()))
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
        done = Finish(hashed, states, completions, self.frontier.completion_mark(), unhashed)
        if self.batch_log is not None:
            self.output.durably(
                self.batch_log.name, functools.partial(self.batch_log.ready, FINISH_ENCODER.encode(done))
            )
        self.on_ready()
        finish_batch(self.frontier, self.neardup, self.tracker.save if self.tracker else None, done)
        if self.batch_log is not None:
            self.batch_log.done()
        self.output.commit()  # files that filled in this batch are sealed only now: a rollback never reaches them

    @staticmethod
    def _drop_late(
        pages: list[Page], late: set[int], processed: list[tuple[Page, Processed]], bugs: list[tuple[Page, Exception]]
    ) -> tuple[list[tuple[Page, Processed]], list[tuple[Page, Exception]]]:
        """The batch without the pages held too long: their URLs are (or will be) fetched again elsewhere."""
        gone = {id(pages[i]) for i in late}
        first = pages[min(late)].lease.url
        log.warning(
            "dropped %d page(s) unstored: held past --process-ttl, they are fetched again (first: %s)",
            len(late),
            redact(first),
        )
        return [p for p in processed if id(p[0]) not in gone], [b for b in bugs if id(b[0]) not in gone]

    def _completion(self, page: Page, out: Processed, counters: dict[str, int]) -> Completion:
        """The URL's completion; with --recrawl-after it also (re)enters the recrawl set, in the same step."""
        lease = page.lease
        failed = (out.record.error or "failed") if page.retried_out else ""
        if self.discovery.recrawl_after > 0:
            base = self.ctx.recrawl_base(lease.url, out.record.content_type or "")
            archived = self.archives and out.warc
            state, due_ms = next_state(page, out.record, base, same_content=out.same_content, archived=archived)
            if state:
                return Completion(lease.token, lease.shard, counters, lease.url, state, due_ms, failed)
        return Completion(lease.token, lease.shard, counters, failed=failed)

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
            if self.discovery.skip_near_duplicates and out.new_urls:
                out.counters[DROP_PREFIX + NEAR_DUPLICATE] = len(out.new_urls)
                out.dropped.extend((new.url, NEAR_DUPLICATE) for new in out.new_urls)
                out.new_urls = []
                out.record.outlinks = 0
        return [(url, value) for _, url, value in hashed]
