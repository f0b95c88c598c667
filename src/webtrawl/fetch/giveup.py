"""A host that is down gives up its queued URLs: they are not requested one by one at the host's pace, which held a
crawl or a monitoring round for minutes to days. Each ends at once as a failed page, as a URL whose retries ran out:
a record with the reason its host is down for, kept for ``trawl requeue``. Two ways a host is found down:

- Parked: after the failure that parks it (``--park-after`` failures in a row, or one more while parked; the
  release answers :class:`~webtrawl.frontier.Parked`), its queue ends as ``host-down``, each queued URL otherwise
  requested an hour apart (the longest back-off). What is queued for the host later is tried after the parked
  wait, and given up too if that try fails; an answer ends the parking.
- robots.txt given up (``--robots-give-up`` unavailable answers in a row, or a ``dns``/``tls`` failure at once):
  RFC 9309 disallows every URL of the origin until robots.txt is asked again, after ``--robots-ttl``; the URL that
  met it and the origin's other queued URLs end with the same reason (``robots-unavailable``, ``dns``, ``tls``...)
  and detail, instead of each waiting for the host's turn to end one at a time. One found later meets the same
  cached robots.txt: it ends at its turn, with whatever is queued of the origin by then.

Crash safety as for a fetched page: the frontier leases the URLs it gives up to this fetcher (frontier/giveup.py),
and a parser's completion ends them; a kill before that leaves leases its restart takes back. Nothing is requested,
so politeness is untouched, and the pages take no ``--max-pages`` budget (not reported ``ended``), are not counted
fetched (no release counters) and count ``given-up`` with their completion.
"""

from __future__ import annotations

import logging
import time

from webtrawl.errors import HostDown
from webtrawl.fetch.args import FetcherArgs
from webtrawl.fetch.visitdeps import PageChannel, VisitFrontier
from webtrawl.frontier import Parked
from webtrawl.messages import Lease, Page
from webtrawl.politeness import HOST_BROKEN_REASONS, RobotsRules

log = logging.getLogger("webtrawl.fetch")


def last_error(page: Page) -> str:
    """What the failure that parked the host was, for the given-up pages' detail."""
    if page.error:
        return f"{page.error}: {page.error_detail}" if page.error_detail else page.error
    return f"HTTP {page.status} {page.reason}".strip()


def host_down(page: Page, parked: Parked) -> tuple[str, str]:
    """The reason and detail of the URLs a parked host gives up, ``page`` the one whose failure parked it."""
    failed = f"{page.lease.host} failed {parked.failures} times in a row (last: {last_error(page)})"
    return HostDown.reason, f"not requested: {failed}"


def robots_given_up(rules: RobotsRules) -> tuple[str, str]:
    """The reason and detail of the URLs of an origin whose robots.txt was given up."""
    if rules.error in HOST_BROKEN_REASONS:  # given up at its first failure (fetch/robots.py): say so
        detail = f"robots.txt unreachable ({rules.error}): the host fails for every URL, so it is not retried"
    else:
        detail = f"robots.txt unreachable {rules.failures} times in a row ({rules.error})"
    # A name that does not resolve or a host whose TLS fails is reported as such, not as a robots problem.
    reason = rules.error if rules.error in (*HOST_BROKEN_REASONS, "proxy") else "robots-unavailable"
    return reason, detail


async def give_up_queue(
    args: FetcherArgs,
    frontier: VisitFrontier,
    sender: PageChannel,
    lease: Lease,
    why: tuple[str, str],
    origin: str = "",
) -> int:
    """Hand the parsers a failed page (``why``: its reason and detail) for each queued URL the frontier gives up for
    ``lease``'s host, a chunk per frontier call, until none is left: all of a parked host's (``origin`` "", while it
    is parked), or those of ``origin``, whose robots.txt was given up. Returns how many. A stop ends it between two
    chunks: the rest stays queued for the next run."""
    reason, detail = why
    recrawl = args.discovery.recrawl_after > 0
    total = 0
    while not args.stop.is_set():
        asked = time.monotonic()  # the leases' deadline counts from before the call, as a release's does
        given = await frontier.give_up(lease.shard, lease.host, args.owner, origin)
        urls = [x.url for x in given.leases]
        # a page of the recrawl set keeps its state: watched again once the host answers
        states = await frontier.recrawl_states(lease.shard, urls) if recrawl and urls else [""] * len(urls)
        keep_until = asked + args.frontier.process_ttl_ms / 1000
        for x, state in zip(given.leases, states, strict=True):
            page = Page(lease=x, error=reason, error_detail=detail, recrawl=state, fetch_time=time.time())
            page.keep_until, page.retried_out, page.given_up = keep_until, True, True
            await sender.send(page)
        total += len(urls)
        if not given.more:
            break
    if total:
        down = origin or lease.host
        log.info("%s: %s is down (%s); %d queued URL(s) given up unrequested", args.owner, down, detail, total)
    return total
