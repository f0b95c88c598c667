"""What a sink stores of a batch: rows of items or of page records, keyed, one set per URL.

Items are keyed by (crawl, url, idx) and page records by (crawl, url). A URL that appears twice in one batch (it was
fetched again after a kill while its first fetch was still queued) keeps only its last page, so one write never
holds two rows with one key. The URLs of the batch are returned too: a table sink deletes their old rows of this crawl
before inserting, so a URL extracted again with fewer items keeps no stale rows. For items, only the URLs whose
page was extracted this time: a recrawl's revisit or a failed fetch keeps the items its last extraction gave.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

import msgspec

from webtrawl.store.base import PageOutput
from webtrawl.store.sinks.schema import Kind, column_name


class What(StrEnum):
    ITEMS = "items"
    RECORDS = "records"


ITEM_KEYS = {"crawl": Kind.TEXT, "url": Kind.TEXT, "idx": Kind.BIGINT}
RECORD_KEYS = {"crawl": Kind.TEXT, "url": Kind.TEXT}
_ITEM_FIXED = ("crawl", "url", "idx", "fetch_time")
DEFAULT_TABLE = {What.ITEMS: "items", What.RECORDS: "pages"}


def keys_of(what: What) -> dict[str, Kind]:
    return dict(ITEM_KEYS if what is What.ITEMS else RECORD_KEYS)


class Rows(msgspec.Struct):
    urls: list[str]  # every URL of the batch whose rows these replace
    rows: list[dict[str, Any]]


def _names(fields: dict[str, Any], cache: dict[str, str]) -> dict[str, Any]:
    out = {}
    for field, value in fields.items():
        name = cache.get(field)
        if name is None:
            name = cache[field] = column_name(field, _ITEM_FIXED)
        out[name] = value
    return out


def _extracted(out: PageOutput) -> bool:
    """Whether this fetch of the page gave its items anew (its rows replace those held), as its record says: a
    recrawl's revisit (304, the same bytes), a failed fetch (a 5xx in a round) or a page not extracted (a redirect,
    not HTML) leaves the rows of its last extraction, as ``items/*.jsonl`` (and ``trawl export``) do."""
    return isinstance(out.record.items, int) or bool(out.items)


class RowMaker:
    """Turns batches into rows for one kind of output and one crawl (keeps the field -> column name cache)."""

    def __init__(self, what: What, crawl_id: str) -> None:
        self.what = what
        self.crawl_id = crawl_id
        self._names: dict[str, str] = {}

    def __call__(self, batch: Sequence[PageOutput]) -> Rows:
        last: dict[str, PageOutput] = {}
        for out in batch:
            if self.what is What.ITEMS and not _extracted(out):
                continue  # its items are those held: a revisit (304, same bytes), a failure, a page not extracted
            last.pop(out.record.url, None)  # keep batch order of the last occurrence
            last[out.record.url] = out
        urls = list(last)
        rows: list[dict[str, Any]] = []
        crawl = self.crawl_id
        if self.what is What.RECORDS:
            unset = msgspec.UNSET
            for out in last.values():  # fields a plain crawl leaves unset (main text...) are not columns
                rows.append(
                    {"crawl": crawl, **{k: v for k, v in msgspec.structs.asdict(out.record).items() if v is not unset}}
                )
            return Rows(urls, rows)
        extra_urls: set[str] = set()
        seen: set[tuple[str, int]] = set()
        for out in last.values():
            for item in out.items:
                key = (item.url, item.index)
                if key in seen:
                    continue
                seen.add(key)
                if item.url not in last:
                    extra_urls.add(item.url)
                row = {"crawl": crawl, "url": item.url, "idx": item.index, "fetch_time": item.fetch_time}
                row.update(_names(item.fields, self._names))
                rows.append(row)
        return Rows(urls + sorted(extra_urls), rows)

    def from_dicts(self, dicts: Sequence[dict[str, Any]]) -> Rows:
        """Rows from lines of the crawl's JSONL (``trawl export``), whole URLs only: items as the parser writes them
        (``{"url", "fetch_time", "index", "fields"}``) or page records."""
        rows: list[dict[str, Any]] = []
        urls: dict[str, int] = {}
        for line in dicts:
            url = str(line.get("url", ""))
            position = urls[url] = urls.get(url, -1) + 1
            if self.what is What.RECORDS:
                rows.append({"crawl": self.crawl_id, **line})
                continue
            fields = line.get("fields")
            if not isinstance(fields, dict):  # a flat line: everything but the item's own keys is a field
                fields = {k: v for k, v in line.items() if k not in _ITEM_FIXED and k != "index"}
            index = line.get("index", line.get("idx", position))
            row = {"crawl": self.crawl_id, "url": url, "idx": index, "fetch_time": line.get("fetch_time", "")}
            row.update(_names(fields, self._names))
            rows.append(row)
        return Rows(list(urls), rows)
