"""The store's seam: what a parser hands to its outputs, and the small protocol every output implements.

A parser turns each page into one :class:`PageOutput` (the page as fetched, its typed record, its items and its
dropped links) and hands a batch of them to the fan-out, which gives the batch to every configured :class:`Sink`
(WARC, JSONL records, dropped links, items; later CSV, SQLite, PostgreSQL, Parquet) and then flushes each one.
Only when every sink's ``flush`` has returned are the batch's links added and its URLs completed, so a kill -9
anywhere leaves a URL leased (fetched again) rather than completed without its outputs.

Exactly-once for a URL fetched twice (it was in flight at a kill) is the sink's job. Tables upsert on
(crawl, url, index), so a second fetch of a URL replaces its rows. The file sinks (WARC, JSONL, CSV, Parquet) say
where their files stand and hold back sealing until the batch is completed (``marks``/``commit``,
:class:`~webtrawl.store.batchlog.Marked`): the parser's batch log then cuts a killed batch's rows off, or completes
its URLs, so a page written but not completed is not written again (:mod:`webtrawl.store.batchlog`). A fetcher's
death leaves no such page either: its next life takes back its leases once the parsers have stored what it handed
them (``pagepipe``'s barrier).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import msgspec

from webtrawl.messages import Page


class PageRecord(msgspec.Struct):
    """One line of ``records/*.jsonl``: what happened to one URL (fetched, failed or refused); one shape for all."""

    url: str
    final_url: str
    status: int = 0
    content_type: str = ""
    bytes: int = 0
    fetch_time: str = ""  # ISO 8601, UTC, milliseconds
    elapsed_ms: float = 0.0
    depth: int = 0
    hops: int = 0
    retries: int = 0
    title: str = ""
    outlinks: int = 0
    content_hash: str = ""
    encoding: str = ""
    encoding_source: str = ""
    error: str | None = None
    error_detail: str = ""
    ip: str = ""
    redirect: str = ""
    canonical: str = ""
    noindex: bool = False
    nofollow: bool = False
    truncated: bool = False
    # Only with --extract / --text (UNSET fields are left out of the JSON line, so a plain crawl's records keep
    # exactly the keys above): how many items the page gave, and its main text with what came with it.
    items: int | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    text_title: str | msgspec.UnsetType = msgspec.UNSET
    author: str | msgspec.UnsetType = msgspec.UNSET
    date: str | msgspec.UnsetType = msgspec.UNSET
    language: str | msgspec.UnsetType = msgspec.UNSET
    markdown: str | msgspec.UnsetType = msgspec.UNSET  # --markdown (or --chunks): the main content as Markdown
    # Only for a sitemap or feed: its kind (urlset, index, rss, atom); its listed URLs are the record's outlinks.
    sitemap: str | msgspec.UnsetType = msgspec.UNSET
    # Only with --near-duplicates: the simhash of the main text (16 hex digits; absent for a text too short to
    # judge), and the URL of an earlier page within 3 bits of it.
    simhash: str | msgspec.UnsetType = msgspec.UNSET
    near_duplicate_of: str | msgspec.UnsetType = msgspec.UNSET
    # Only for a recrawled page that did not change (--recrawl-after): server-not-modified (a 304) or
    # identical-payload-digest; its WARC record is a revisit.
    revisit: str | msgspec.UnsetType = msgspec.UNSET
    # Only for a page a browser rendered (--render): that it was, why, the requests the render made (the page
    # included) and the ones it refused, by reason. Links, title and items then come from the rendered DOM.
    rendered: bool | msgspec.UnsetType = msgspec.UNSET
    render_reason: str | msgspec.UnsetType = msgspec.UNSET
    render_requests: int | msgspec.UnsetType = msgspec.UNSET
    render_blocked: dict[str, int] | msgspec.UnsetType = msgspec.UNSET


class Item(msgspec.Struct):
    """One item a user's rules or callback extracted from a page.

    ``index`` is the item's position among the page's items: with the crawl id and the URL it is the key a table
    upserts on, so the same page extracted twice leaves one set of rows.
    """

    url: str
    fetch_time: str
    index: int
    fields: dict[str, Any]


class Drop(msgspec.Struct):
    """A link that was not followed, and why (one line of ``dropped/*.jsonl``)."""

    url: str
    reason: str
    parent: str
    depth: int


class Chunk(msgspec.Struct):
    """One line of ``chunks/*.jsonl`` (``--chunks``): a piece of a page's Markdown for a vector index, or, with
    ``deleted``, the tombstone of a chunk the page no longer has (its other fields then empty). ``chunk_id`` is
    stable across recrawls for the same text under the same headings (extract/chunks.py)."""

    url: str
    chunk_id: str
    heading_path: list[str]
    text: str
    content_hash: str
    fetch_time: str
    deleted: bool = False


class Change(msgspec.Struct):
    """One line of ``changes/*.jsonl`` (``--changes`` with ``--recrawl-after``): what changed on a page between
    the copy held and this fetch (parse/changes.py). ``change``: changed, new, gone, or (``--changes-links``) links."""

    url: str
    fetch_time: str
    previous_fetch_time: str
    change: str
    text_diff: str = ""  # a unified diff of the main text, capped
    items_diff: dict[str, Any] = msgspec.field(default_factory=dict)  # added, removed, changed (fields old/new)
    links_diff: dict[str, Any] = msgspec.field(default_factory=dict)  # --changes-links: links added, removed


class PageOutput(msgspec.Struct):
    """Everything one page produced, as the sinks receive it."""

    page: Page
    record: PageRecord
    warc: bool = True  # write the WARC request/response pair (False for noindex pages when honoured)
    items: list[Item] = msgspec.field(default_factory=list)
    dropped: list[Drop] = msgspec.field(default_factory=list)
    chunks: list[Chunk] = msgspec.field(default_factory=list)
    changes: list[Change] = msgspec.field(default_factory=list)


class ColumnTypes(Protocol):
    """Where the writers of a crawl agree on the type of each column of their files (Parquet): a parser's is the
    crawl's Redis, shared by every node (parse/columns.py)."""

    def agree(self, scope: str, wanted: dict[str, str]) -> dict[str, str]:
        """Each key's type as the first writer that asked gave it (``wanted`` for those new to all)."""
        ...


class SinkContext(msgspec.Struct, frozen=True):
    """What a sink is built with, inside the parser process that uses it."""

    out_dir: Path
    prefix: str  # file name prefix of this process: ``<node>-p<index>``
    crawl_id: str  # the same on every node of one crawl; part of every table key
    chunk: int = 10_000  # rows per rotated file, for file sinks
    warc_max_bytes: int = 1 << 30  # WARC files rotate at this size
    encrypt_to: tuple[str, ...] = ()  # age public keys the files are encrypted to (--encrypt-to)
    columns: ColumnTypes | None = None  # the crawl-wide column types (none: this node's own, in out_dir)
    warcinfo: tuple[tuple[str, str], ...] = ()  # more fields of each WARC file's warcinfo record (the crawl's)
    stamp: str = ""  # the crawl's creation time, YYYYMMDDhhmmssSSS (frontier meta; "" in a crawl from before it)

    def warc_prefix(self) -> str:
        """The WARC files' name prefix, ``<node>-<stamp>-p<index>``: IIPC's PREFIX-TIMESTAMP-SERIAL, so that two
        crawls' files (the same node id, the same machine) never share a name in one replay collection, and no
        other series' name starts with one's prefix. A crawl from before the stamp goes on with ``prefix``."""
        node, sep, index = self.prefix.rpartition("-p")
        if not self.stamp:
            return self.prefix
        return f"{node}-{self.stamp}-p{index}" if sep and index.isdigit() else f"{self.prefix}-{self.stamp}"

    def recipients(self) -> list[Any]:
        """The ``encrypt_to`` keys as pyrage recipients (none: files are written plain)."""
        from webtrawl.formats.agekey import recipients

        return recipients(self.encrypt_to)


class Sink(Protocol):
    """An output of the parser processes: the crawl's own files, a built-in table or file sink, or a user's class.

    **Built** inside each parser process from its URL (:mod:`webtrawl.store.registry`): a user's class named
    ``package.module:Class?key=value&...`` is imported there and called as ``Class(stream, ctx, **options)``:
    ``stream`` is the one it holds (``"items"`` for ``--items-to``, ``"records"`` for ``--records-to``), ``ctx`` a
    :class:`SinkContext` (``crawl_id``, this process's file ``prefix``, the output directory) and ``options`` the
    query's values (strings). ``trawl crawl`` imports it at start, so a bad path fails then.

    **Receives** ``write(batch)``: a sequence of :class:`PageOutput`, one per page, each with its ``record`` (keyed
    by ``(crawl, url)``) and its ``items`` (each keyed by ``(crawl, url, index)``); a sink takes what its stream
    names (``RowMaker(stream, ctx.crawl_id)(batch)`` gives those as flat keyed rows, one set per URL). Then
    ``flush()``: return only when everything written is durable. Both are called for every batch before any URL of
    the batch is completed in the frontier; ``close()`` once at the end.

    **Away**: a sink whose destination is away for a while (database restarting, network error) raises
    :class:`webtrawl.errors.SinkUnavailable` from ``write``/``flush`` after cutting back to its last durable state;
    the fan-out pauses the crawl (no new leases) and calls it again with the same batch until it goes through. A full
    disk (``OSError`` ENOSPC) is waited out the same way. Anything else is a bug or a row the destination refuses
    (:class:`webtrawl.errors.SinkFailed`): the node stops at once with one line naming the sink, the error and where
    (a bug's traceback in the log), and the batch, not completed, is written again on resume.

    **Delivery** is at least once: a kill -9 between ``flush`` and the completion of the batch's URLs, or a page in
    flight at a kill, gives the sink the same URL again after the resume (possibly fetched again, so the same
    fields). A sink that must hold each item once upserts on the key (the built-in table sinks delete the batch's
    URLs' rows of the crawl and insert, in one transaction) or lets its reader keep the last row per key. The
    built-in file sinks hold each page once through the parser's batch log instead (``marks``/``commit`` below).

    Optional: ``probe()`` (built-ins only), run once at start on a sink opened for the purpose, fails with a
    :class:`webtrawl.errors.ConfigError` if the destination cannot be written. ``marks()`` and ``commit()``
    (built-ins only, :class:`~webtrawl.store.batchlog.Marked`): where its files stand before a batch, and the
    batch's completion, after which a file the batch filled may be sealed.
    """

    name: str  # for log lines, secrets masked (the registry sets the masked URL on a sink without one)

    def write(self, batch: Sequence[PageOutput]) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...
