"""When a node stops, and how: the stop conditions (--max-time, --max-pages, trawl stop, an empty frontier) and the
drain that ends the children in the order that loses no URL.

A stop (--max-time, --max-pages, trawl stop, SIGTERM, SIGHUP, Ctrl-C) ends the node within 10 s while Redis answers:
fetchers get their abandon grace plus time to hand back URLs and pages, parsers what is left of the bound (at least
``_PARSER_MIN_S``). With Redis out of reach (a partition) the supervisor's own Redis calls each wait out their socket
timeouts: ~47 s was seen, within the grace period docs/deploy.md asks for (150 s).
"""

from __future__ import annotations

import logging
import multiprocessing.synchronize
import os
import time
from dataclasses import dataclass
from multiprocessing.sharedctypes import Synchronized
from pathlib import Path

from webtrawl.config import CrawlOptions
from webtrawl.errors import RedisUnavailable, StateError
from webtrawl.fetch.args import STOP_GRACE_S
from webtrawl.fetch.stats import FetcherStats
from webtrawl.frontier import RedisFrontier
from webtrawl.node.children import Children
from webtrawl.node.presence import StopWatch

log = logging.getLogger("webtrawl.node")

STOP_BOUND_S = 8.0
_FETCHER_EXIT_S = 3.0
_PARSER_MIN_S = 2.0


@dataclass
class PageBudget:
    """--max-pages over the whole crawl: the URLs ended before this run plus those of this run's fetchers."""

    max_pages: int
    stats: FetcherStats
    shared: Synchronized[int] | None = None  # pages the fetchers may still reserve (None: no --max-pages)
    before: int = 0  # the URLs the crawl ended before this run (its "stored" records)

    def done(self) -> int | None:
        """Pages --max-pages has used up, as the stop condition counts them: the URLs the crawl ended before this run
        plus the URLs this run's fetchers ended. Never the budget they merely reserved: a reservation may be given
        back (robots.txt first, a retry, an abandoned request), and progress must not run backwards."""
        if self.shared is None:
            return None
        return min(self.max_pages, self.used())

    def used(self) -> int:
        return self.before + self.stats.ended()

    def spent(self) -> bool:
        """--max-pages is reached: its pages are done, or the budget is gone with nothing in flight that could
        give some of it back (a fetcher restarted after a kill -9 never returns what it had reserved)."""
        if self.shared is None:
            return False
        if self.used() >= self.max_pages:
            return True
        # One snapshot under the budget's lock, which fetchers hold to take and give back budget: read apart, the
        # budget could be read while a fetcher held it and the leases after it gave it back and announced none, a
        # pair that never was (a loaded node stopped at 1 page of --max-pages 3).
        with self.shared.get_lock():
            return self.shared.value <= 0 and self.stats.leases() == 0


class OutDir:
    """The node's ``--out`` as it started. Deleted under a running crawl (or replaced: the outputs make their own
    directories again, and with them a new ``--out``), it took the node's batch logs, the sockets its fetchers reach
    the parsers by, the children's logs and, for the embedded Redis, its append-only file and socket: a process
    restarted then could not reach Redis and the crawl hung. The node stops, and says why once."""

    def __init__(self, path: Path, embedded: bool) -> None:
        self.path = path
        self.embedded = embedded
        self._id = self._identity()

    def _identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def gone(self) -> str:
        """Why the node must stop ("" while ``--out`` is the directory it started in)."""
        if self._identity() == self._id:
            return ""
        lost = "the crawl's state (its Redis data) and " if self.embedded else ""
        return f"--out {self.path} was deleted while the crawl ran, with {lost}what it held"


def ended_badly(redis_away: str, out_dir: OutDir) -> None:
    """After the drain: the error a node ends with that stopped for Redis out of reach too long, or its ``--out``
    gone (nothing if it stopped for a normal reason)."""
    if redis_away:
        raise RedisUnavailable(f"{redis_away}: the node stopped")
    if reason := out_dir.gone():
        again = "start the crawl again" if out_dir.embedded else "run the node again to go on from Redis"
        raise StateError(f"{reason}: the node stopped; {again}")


def local_stop_reason(crawl: CrawlOptions, budget: PageBudget, elapsed: float, out_dir: OutDir | None = None) -> str:
    """The stop conditions the node sees without Redis (they hold while Redis is away too), or ``""``."""
    if out_dir is not None and (gone := out_dir.gone()):
        return gone
    if crawl.max_time and elapsed >= crawl.max_time:
        return f"--max-time {crawl.max_time:g}s reached"
    if budget.spent():
        return f"--max-pages {crawl.max_pages} reached"
    return ""


def stop_reason(
    crawl: CrawlOptions,
    budget: PageBudget,
    stops: StopWatch | None,
    frontier: RedisFrontier,
    elapsed: float,
) -> str:
    """Why the node should stop now, or ``""``; with ``--keep-running`` an empty frontier is not a reason (a node
    waits for ``trawl seed``, a crawl for ``trawl requeue`` or ``trawl seed``, until ``trawl stop`` or a signal)."""
    local = local_stop_reason(crawl, budget, elapsed)
    if local:
        return local
    finished = frontier.is_finished()  # asked at every tick: a Redis that lost the crawl is an error (StateError)
    if stops is not None and stops.stop_requested():
        return "trawl stop requested"
    if crawl.keep_running:
        return ""
    return "finished" if finished else ""


def drain(children: Children, fetchers_done: multiprocessing.synchronize.Event) -> None:
    """Fetchers first (they abandon requests still running after a short grace), then parsers; each kind is
    killed if it overstays, so a stop ends within ~STOP_BOUND_S whatever the web does. A killed child's URLs
    stay leased to this node and are taken back when it starts again: never lost."""
    deadline = time.monotonic() + STOP_BOUND_S
    grace = STOP_GRACE_S + _FETCHER_EXIT_S
    if not children.wait("fetcher", grace):
        log.error("fetchers did not finish within %.0fs; killing them (their URLs stay leased)", grace)
        children.kill("fetcher")
    fetchers_done.set()
    grace = max(_PARSER_MIN_S, deadline - time.monotonic())
    if not children.wait("parser", grace):
        log.error("parsers did not finish within %.0fs; killing them (their URLs stay leased)", grace)
        children.kill("parser")
