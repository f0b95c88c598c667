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
written without reading or storing anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from webtrawl.extract.chunks import TextChunk, chunk_markdown
from webtrawl.frontier.keys import content_key
from webtrawl.parse.changes import ContentState, change_row, chunk_rows, decode_state, new_state

if TYPE_CHECKING:
    from webtrawl.messages import Page
    from webtrawl.parse.process import Processed

GONE_STATUSES = (404, 410)


@dataclass(slots=True)
class _Write:
    key: str
    url: str
    state: ContentState | None  # None: drop it (the page is gone)


class ContentTracker:
    """Fills each processed page's chunk and change rows; :meth:`save` then stores the batch's new states."""

    def __init__(
        self, client: Any, prefix: str, *, chunk_size: int, changes: bool, keep_state: bool, announce_new: bool
    ) -> None:
        self.client, self.prefix = client, prefix
        self.chunk_size, self.changes, self.keep_state, self.announce_new = (
            chunk_size,
            changes,
            keep_state,
            announce_new,
        )

    def apply(self, processed: Sequence[tuple[Page, Processed]]) -> list[_Write]:
        """Add the rows of every page of the batch to its ``Processed``; returns the state writes to :meth:`save`."""
        pages = [(page, out) for page, out in processed if _content(out) or _gone(page, out)]
        previous = self._load(pages) if self.keep_state else [None] * len(pages)
        writes = []
        for (page, out), held in zip(pages, previous, strict=True):
            url, key = page.lease.url, content_key(self.prefix, page.lease.shard)
            when = out.record.fetch_time
            if not _content(out):  # 404/410: gone, if we held it
                if held is not None:
                    out.chunks = chunk_rows(url, when, [], held, gone=True) if self.chunk_size else []
                    out.changes = [c for c in [change_row(url, when, held, None, "", [])] if c] if self.changes else []
                    writes.append(_Write(key, url, None))
                continue
            text = out.record.text if isinstance(out.record.text, str) else None
            markdown = out.record.markdown if isinstance(out.record.markdown, str) else ""
            chunks: list[TextChunk] = chunk_markdown(url, markdown, self.chunk_size) if self.chunk_size else []
            now = new_state(when, text, out.items, chunks)
            if self.chunk_size:
                out.chunks = chunk_rows(url, when, chunks, held)
            if self.changes and (held is not None or self.announce_new):
                change = change_row(url, when, held, now, text or "", out.items)
                out.changes = [change] if change is not None else []
            if self.keep_state:
                writes.append(_Write(key, url, now))
        for _, out in pages:  # in the crawl's counters (trawl stats): rows written, changes by kind
            if out.chunks:
                out.counters["chunks"] = len(out.chunks)
            for change in out.changes:
                out.counters[f"changes-{change.change}"] = 1
        return writes

    def save(self, writes: Sequence[_Write]) -> None:
        if not writes:
            return
        pipe = self.client.pipeline(transaction=False)
        for write in writes:
            if write.state is None:
                pipe.hdel(write.key, write.url)
            else:
                pipe.hset(write.key, write.url, write.state.encode())
        pipe.execute()

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


def _gone(page: Page, out: Processed) -> bool:
    return out.record.status in GONE_STATUSES
