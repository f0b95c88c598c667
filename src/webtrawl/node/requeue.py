"""``trawl requeue``: the URLs whose retries ran out (a site down for a while: timeouts, refused connections, 5xx)
go back to their queues, with fresh retries, for the crawl's next run (or the running one) to fetch again.

The frontier keeps each such URL's queue entry when its page is completed (complete.lua, ``SP err``), so a spider's
callback and data, the depth and the priority come back with it; the records keep their first outcome, and a new
record follows it when the URL is fetched again.

A URL that ended because its origin's robots.txt was given up (``robots-unavailable``, ``dns``, ``tls``) would meet
that state again, kept for ``--robots-ttl``, and end at once unrequested: the state of each origin queued again is
forgotten where robots.txt was unavailable, so robots.txt is asked again first (and given up again after
``--robots-give-up`` failures if it still is).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from webtrawl.errors import InputError
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.names import FAILED_KEPT
from webtrawl.node.stats import node_running, redis_of_out
from webtrawl.politeness import RobotsRules


def requeue_failed(out: Path | None, redis_url: str | None, cluster: bool | None, reasons: Sequence[str]) -> int:
    """Queue them again in the crawl of ``out`` (this machine's, live or stopped) or of ``redis_url``."""
    if out is None and not redis_url:
        raise InputError("trawl requeue needs --out DIR (a crawl on this machine) or --redis URL (a shared crawl)")
    with redis_of_out(out, redis_url, cluster) as (url, on_cluster):
        client = connect_sync(url, cluster=on_cluster, writes=True)
        try:
            frontier = RedisFrontier.open(client, FrontierSettings(), create=False)
            origins: set[str] = set()
            others: Counter[str] = Counter()
            queued = frontier.requeue_failed(reasons, origins, others)
            left = frontier.counters().get(FAILED_KEPT)
            _ask_robots_again(frontier, origins)
        finally:
            client.close()
    which = f" that failed with {', '.join(reasons)}" if reasons else ""
    kept = ", ".join(f"{n} {reason}" for reason, n in others.most_common())
    print(f"queued {queued} URL(s){which} again; {left} other failed URL(s) kept" + (f": {kept}" if kept else ""))
    if reasons and not queued and others:  # a reason misspelt, or one no URL is kept for (a 4xx: an answer)
        print(f"no failed URL is kept for {', '.join(reasons)}; --errors takes the reasons above")
    if out is not None and queued:
        if node_running(out):
            print(f"the crawl running in {out} fetches them")
        else:
            print(f"resume the crawl to fetch them: trawl crawl --out {out}")
    return 0


def _ask_robots_again(frontier: RedisFrontier, origins: set[str]) -> None:
    """Forget the robots.txt state of those of ``origins`` where it is unavailable (a good one is kept)."""
    ordered = sorted(origins)
    states = frontier.robots_states(ordered)
    frontier.forget_robots([origin for origin, data in zip(ordered, states, strict=True) if _unavailable(data)])


def _unavailable(data: bytes | None) -> bool:
    try:
        return data is not None and RobotsRules.decode(data).unavailable
    except ValueError:
        return False
