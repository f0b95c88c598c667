"""``gone`` for a page its sitemap no longer lists (``--changes``/``--chunks`` with ``--recrawl-after``).

Each time a sitemap is read whole, the URLs it lists are kept in Redis (``SP sm``, frontier/keys.py): sorted,
newline-joined and zlib-compressed, so about 10 bytes per listed URL, at most the sitemap's own cap (50,000 URLs)
per sitemap, and only in a crawl that tracks content. Only sitemaps that list pages (``urlset`` and text sitemaps,
one URL per line): an index lists sitemaps, not pages, and a feed drops its old entries as a matter of course. When
a later round reads the sitemap again with new content (an unchanged one is a revisit, not read), each URL it
listed before and no longer lists, and whose content is held, gets a ``gone`` change row and tombstones for its
chunks, written with the sitemap's own outputs (:class:`~webtrawl.parse.tracking.ContentTracker`). Its state is
replaced by a marker (``unlisted``): the page may still answer and be fetched again, and is not announced again;
while the marker is held its fetches write no rows.
When a sitemap lists it again the marker is dropped, so its next fetch is a ``new`` page.

A sitemap read in part (capped, or broken midway) is not compared: a URL missing from it may only be past the cut.
A URL that two sitemaps list is gone when either of them drops it.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from webtrawl.parse.sitemap import TEXT

if TYPE_CHECKING:
    from webtrawl.parse.process import Processed

PAGE_LISTS = frozenset({"urlset", TEXT})  # the sitemap kinds that list pages (parse/sitemap.py)


def listing(out: Processed) -> list[str] | None:
    """The URLs a sitemap read whole lists (followed or not), sorted; None for any other page."""
    record = out.record
    if record.sitemap not in PAGE_LISTS or record.error is not None or not 200 <= record.status < 300:
        return None
    if out.counters.get("sitemaps-capped") or out.counters.get("sitemaps-broken"):
        return None
    return sorted({new.url for new in out.new_urls} | {url for url, _ in out.dropped})


def encode_listing(urls: list[str]) -> bytes:
    return zlib.compress("\n".join(urls).encode("utf-8", "surrogatepass"), 6)


def decode_listing(raw: bytes | None) -> set[str] | None:
    """The URLs a sitemap listed when last read; None if it was never read (or the value is not readable)."""
    if not raw:
        return None
    try:
        text = zlib.decompress(raw).decode("utf-8", "surrogatepass")
    except (zlib.error, UnicodeDecodeError):
        return None
    return set(text.split("\n")) if text else set()
