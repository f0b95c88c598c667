"""The parser's side of ``--chunks`` and ``--changes``: a batch's chunk and change rows, and the state they need.

Each page's :class:`~webtrawl.parse.changes.ContentState` lives in Redis in ``P:{P:s}:ct`` (a hash per shard of the
frontier, field: the URL, on the shard of the URL's host), next to the recrawl set it serves, so that any node or
parser process that fetches the page again finds it. It is bounded per page (64 KiB of text and of items before
zlib, 4096 chunk ids): about a quarter of the page's main text in bytes for a typical article.

The order keeps a kill -9 harmless: the batch's states are read, its rows are built and written with the rest of
the batch's outputs, then the new states are stored, then the URLs are completed. A crash before the states are
stored fetches the pages again and writes their rows again (at least once); after, the rows are durable and the
page's next fetch compares with what they said.

Only a crawl with ``--recrawl-after`` keeps states: without it a page is fetched once, and its chunks are all
written without reading or storing anything. Such a crawl also keeps what each sitemap lists, so that a page a
sitemap drops is ``gone`` (:mod:`webtrawl.parse.unlisted`); those rows go out with the sitemap's outputs, in the
same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from webtrawl.extract.chunks import TextChunk, chunk_markdown
from webtrawl.frontier.keys import content_key, sitemap_key
from webtrawl.parse.changes import ContentState, change_row, chunk_rows, decode_state, new_state
from webtrawl.parse.recrawl import GONE_STATUSES
from webtrawl.parse.settle import State, save_states
from webtrawl.parse.unlisted import decode_listing, encode_listing, listing

if TYPE_CHECKING:
    from webtrawl.messages import Page
    from webtrawl.parse.process import Processed


class ContentTracker:
    """Fills each processed page's chunk and change rows; :meth:`save` then stores the batch's new states."""

    def __init__(
        self,
        client: Any,
        prefix: str,
        *,
        chunk_size: int,
        changes: bool,
        keep_state: bool,
        announce_new: bool,
        links: bool = False,
    ) -> None:
        self.client, self.prefix, self.links = client, prefix, links
        self.chunk_size, self.changes, self.keep_state, self.announce_new = (
            chunk_size,
            changes,
            keep_state,
            announce_new,
        )

    def apply(self, processed: Sequence[tuple[Page, Processed]]) -> list[State]:
        """Add the rows of every page of the batch to its ``Processed``; returns the state writes to :meth:`save`."""
        pages = [(page, out) for page, out in processed if _content(out) or _gone(page, out)]
        previous = self._load(pages) if self.keep_state else [None] * len(pages)
        writes: list[State] = []
        for (page, out), held in zip(pages, previous, strict=True):
            url, key = page.lease.url, content_key(self.prefix, page.lease.shard)
            when = out.record.fetch_time
            if held is not None and held.unlisted:  # announced gone already: silent until a sitemap lists it again
                if not _content(out):
                    writes.append((key, url, None))
                continue
            if not _content(out):  # 404/410 or a permanent redirect: gone, if we held it
                if held is not None:
                    out.chunks = chunk_rows(url, when, [], held, gone=True) if self.chunk_size else []
                    out.changes = [c for c in [change_row(url, when, held, None, "", [])] if c] if self.changes else []
                    writes.append((key, url, None))
                continue
            text = out.record.text if isinstance(out.record.text, str) else None
            markdown = out.record.markdown if isinstance(out.record.markdown, str) else ""
            chunks: list[TextChunk] = chunk_markdown(url, markdown, self.chunk_size) if self.chunk_size else []
            now = new_state(when, text, out.items, chunks, _links(out) if self.links else None)
            if held is not None:  # for the recrawl interval: noise in the bytes is not a change of the page
                same = (held.text_digest, held.items_digest, held.chunk_ids, held.links_digest or now.links_digest)
                out.same_content = same == (now.text_digest, now.items_digest, now.chunk_ids, now.links_digest)
            if self.chunk_size:
                out.chunks = chunk_rows(url, when, chunks, held)
            if self.changes and (held is not None or self.announce_new):
                change = change_row(url, when, held, now, text or "", out.items)
                out.changes = [change] if change is not None else []
            if self.keep_state:
                writes.append((key, url, now.encode()))
        sitemaps = [(page, out, urls) for page, out in processed if (urls := listing(out)) is not None]
        if self.keep_state and sitemaps:
            writes += self._unlisted(sitemaps)
        for _, out in processed:  # in the crawl's counters (trawl stats): rows written, changes by kind
            if out.chunks:
                out.counters["chunks"] = len(out.chunks)
            for change in out.changes:
                name = f"changes-{change.change}"
                out.counters[name] = out.counters.get(name, 0) + 1
        return writes

    def _unlisted(self, sitemaps: Sequence[tuple[Page, Processed, list[str]]]) -> list[State]:
        """The sitemaps' new lists, and ``gone`` rows (added to the sitemap's outputs) and markers for the pages
        held that a sitemap no longer lists; a marker is dropped when a sitemap lists its page again."""
        pipe = self.client.pipeline(transaction=False)
        for page, _, _ in sitemaps:
            pipe.hget(sitemap_key(self.prefix, page.lease.shard), page.lease.url)
        writes: list[State] = []
        asks = []
        for (page, out, urls), raw in zip(sitemaps, pipe.execute(), strict=True):
            writes.append((sitemap_key(self.prefix, page.lease.shard), page.lease.url, encode_listing(urls)))
            before = decode_listing(raw)
            if before is not None:  # else its first read: what it lists is the baseline
                now = set(urls)
                asks += [(page, out, url, True) for url in sorted(before - now)]
                asks += [(page, out, url, False) for url in sorted(now - before)]
        if not asks:
            return writes
        pipe = self.client.pipeline(transaction=False)
        for page, _, url, _ in asks:
            pipe.hget(content_key(self.prefix, page.lease.shard), url)
        for (page, out, url, dropped), raw in zip(asks, pipe.execute(), strict=True):
            held, key = decode_state(raw), content_key(self.prefix, page.lease.shard)
            if held is None or held.unlisted == dropped:
                continue  # not held; dropped and announced already; or listed again but never dropped
            if not dropped:  # listed again: its next fetch is a new page
                writes.append((key, url, None))
                continue
            when = out.record.fetch_time
            if self.chunk_size:
                out.chunks += chunk_rows(url, when, [], held, gone=True)
            if self.changes:
                out.changes += [c for c in [change_row(url, when, held, None, "", [])] if c]
            writes.append((key, url, ContentState(when, unlisted=True).encode()))
        return writes

    def save(self, writes: Sequence[State]) -> None:
        save_states(self.client, writes)

    def _load(self, pages: Sequence[tuple[Page, Processed]]) -> list[ContentState | None]:
        if not pages:
            return []
        pipe = self.client.pipeline(transaction=False)
        for page, _ in pages:
            pipe.hget(content_key(self.prefix, page.lease.shard), page.lease.url)
        return [decode_state(raw) for raw in pipe.execute()]


def _content(out: Processed) -> bool:
    """A page whose main text was extracted (a 2xx HTML page, not a revisit, no error)."""
    record = out.record
    has_text = isinstance(record.text, str) or isinstance(record.markdown, str)
    return has_text and record.error is None and 200 <= record.status < 300


def _links(out: Processed) -> list[str]:
    """The page's links (--changes-links): those it follows and those it does not, as canonical URLs."""
    return [u.url for u in out.new_urls] + [url for url, _ in out.dropped]


def _gone(page: Page, out: Processed) -> bool:
    return out.record.status in GONE_STATUSES
