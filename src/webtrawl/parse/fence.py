"""Self-fencing of parsers: a page is stored only while its URL surely is still this parser's to complete.

A fetched page stays leased to the parser pool for ``--process-ttl`` from its release (``frontier/base.py`` KEEP);
then any supervisor may take the URL back and another fetcher fetch it again. A parser that held the page longer
(stalled, or cut off from Redis) would write a second record of the URL and complete it over the other fetch's work.
So a batch drops, before writing anything, the pages with less than a margin left of their hold: by this machine's
monotonic clock, against the deadline the fetcher counted from before its release was sent (``Page.keep_until``).
A completion that still comes too late (the outputs waited out a full disk) is discarded by ``complete.lua``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from webtrawl.config import CrawlConfig
from webtrawl.errors import InputError
from webtrawl.messages import Page

# What a batch needs left of a page's hold once the page is processed: writing the outputs, adding the links (with
# --redis-replicas, waiting for the replicas) and completing. A short --process-ttl gets a quarter of itself.
KEEP_MARGIN_S = 5.0
MIN_PROCESS_TTL_S = 2.0  # a page must reach a parser, be parsed and be stored within --process-ttl


def keep_margin(process_ttl_s: float) -> float:
    return min(KEEP_MARGIN_S, process_ttl_s / 4)


def check_process_ttl(cfg: CrawlConfig) -> None:
    """Refuse a --process-ttl no page could be stored within: every page would be dropped and fetched again."""
    ttl = cfg.frontier.process_ttl
    if ttl < MIN_PROCESS_TTL_S:
        raise InputError(
            f"--process-ttl {ttl:g} is too short: a fetched page must be parsed and stored within it "
            f"(at least {MIN_PROCESS_TTL_S:g}s)"
        )


def overdue(pages: Sequence[Page], margin_s: float) -> set[int]:
    """The indexes of the pages whose hold ends within ``margin_s`` (or has ended); pages with no deadline
    (``keep_until`` 0: not from a fetcher) never are."""
    now = time.monotonic() + margin_s
    return {i for i, page in enumerate(pages) if 0 < page.keep_until <= now}
