"""A host that is down gives up its queued URLs: after the failure that parks it (``--park-after`` failures in a
row, or one more while parked; the release answers :class:`~webtrawl.frontier.Parked`), its queued URLs are not
requested one by one an hour apart (the longest back-off), which held a crawl or a monitoring round for days. Each
ends at once as a failed page, as a URL whose retries ran out: a record with the error ``host-down``, kept for
``trawl requeue``. What is queued for the host later is tried after the parked wait, and given up too if that try
fails; an answer ends the parking.

Crash safety as for a fetched page: the frontier leases the URLs it gives up to this fetcher (frontier/giveup.py),
and a parser's completion ends them; a kill before that leaves leases its restart takes back. Nothing is requested,
so politeness is untouched, and the pages take no ``--max-pages`` budget (not reported ``ended``) and are not counted
fetched (no release counters).
"""

from __future__ import annotations

import logging
import time

from webtrawl.errors import HostDown
from webtrawl.fetch.args import FetcherArgs
from webtrawl.fetch.visitdeps import PageChannel, VisitFrontier
from webtrawl.frontier import Parked
from webtrawl.messages import Lease, Page

log = logging.getLogger("webtrawl.fetch")


def last_error(page: Page) -> str:
    """What the failure that parked the host was, for the given-up pages' detail."""
    if page.error:
        return f"{page.error}: {page.error_detail}" if page.error_detail else page.error
    return f"HTTP {page.status} {page.reason}".strip()


async def give_up_queue(
    args: FetcherArgs, frontier: VisitFrontier, sender: PageChannel, lease: Lease, parked: Parked, last: str
) -> int:
    """Hand the parsers a failed page for each queued URL of ``lease``'s parked host, a chunk per frontier call,
    until none is left or the host is no longer parked; returns how many. A stop ends it between two chunks: the
    rest stays queued for the next run."""
    detail = f"not requested: {lease.host} failed {parked.failures} times in a row (last: {last})"
    recrawl = args.discovery.recrawl_after > 0
    total = 0
    while not args.stop.is_set():
        asked = time.monotonic()  # the leases' deadline counts from before the call, as a release's does
        given = await frontier.give_up(lease.shard, lease.host, args.owner)
        urls = [x.url for x in given.leases]
        # a page of the recrawl set keeps its state: watched again once the host answers
        states = await frontier.recrawl_states(lease.shard, urls) if recrawl and urls else [""] * len(urls)
        keep_until = asked + args.frontier.process_ttl_ms / 1000
        for x, state in zip(given.leases, states, strict=True):
            page = Page(lease=x, error=HostDown.reason, error_detail=detail, recrawl=state, fetch_time=time.time())
            page.keep_until, page.retried_out = keep_until, True
            await sender.send(page)
        total += len(urls)
        if not given.more:
            break
    if total:
        log.info("%s: %s is down (%s); %d queued URL(s) given up unrequested", args.owner, lease.host, last, total)
    return total
