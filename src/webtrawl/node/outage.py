"""The supervisor's side of a Redis outage (a restart, a failover, a network cut, the embedded server killed).

Each tick's Redis work (counters, reclaim, heartbeat, stop checks) goes through :meth:`RedisWatch.run`: a transient
error pauses that work instead of killing the supervisor. The start of an outage is one alert (``redis``: a
WARNING line and ``--alert-cmd``), its end the alert's INFO line. Fetchers and parsers wait out the same outage
in their frontier calls (``frontier/retry.py``). The embedded server, if it died, is started again here from its
append-only file. An outage longer than ``limit_s`` ends the node with an error instead of waiting for ever.

A Redis at its ``maxmemory`` (``noeviction``) answers but refuses the writes that need memory, and one that cannot
write its append-only file (a full disk) refuses every write (``MISCONF``): :meth:`RedisWatch.room` (fed each tick
from INFO memory and persistence) raises the ``redis-full`` alert and the ``full`` pause (the fetchers stop leasing)
until it has room again; meanwhile every process waits in its refused calls, and the node goes on by itself.

With the replica barrier on (``--redis-replicas``, auto: the replicas Redis had at the start), :meth:`RedisWatch.
replicas` (each tick, from INFO replication) raises ``redis-replicas`` while a master has fewer replicas than the
crawl's writes wait for (a failover took the replica that was promoted; one is down): the crawl goes on, but another
failover now may lose the last writes. One line for the node, not one a minute from each fetcher and parser.
"""

from __future__ import annotations

import logging
import multiprocessing.synchronize
import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import redis.exceptions as rex

from webtrawl.errors import StateError
from webtrawl.frontier.connect import RedisMemory, SyncClient, mask_url, one_line
from webtrawl.frontier.replicas import connected_replicas, replicas_of
from webtrawl.frontier.retry import is_transient, refused_for_disk, refused_for_replicas
from webtrawl.metrics.alerts import Alerts
from webtrawl.metrics.report import format_bytes
from webtrawl.node.redis_server import EmbeddedRedis

log = logging.getLogger("webtrawl.node")

T = TypeVar("T")
P = ParamSpec("P")

ALERT = "redis"
FULL_ALERT = "redis-full"
REPLICAS_ALERT = "redis-replicas"
OUTAGE_LIMIT_S = 600.0  # then the node stops with an error: its children cannot go on


class RedisWatch:
    def __init__(
        self,
        url: str,
        alerts: Alerts,
        embedded: EmbeddedRedis | None = None,
        limit_s: float = OUTAGE_LIMIT_S,
        full: multiprocessing.synchronize.Event | None = None,
    ) -> None:
        self.url = mask_url(url)
        self.alerts = alerts
        self.embedded = embedded
        self.limit_s = limit_s
        self.down_since: float | None = None
        self.full = full  # set while Redis is at its maxmemory or cannot save: the fetchers' pause
        self._no_info = False  # INFO refused: the replicas cannot be counted
        self._expected: int | None = None  # the replicas the crawl's writes wait for (replicas())

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def run(self, work: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
        """``work(*args, **kwargs)``, or None if Redis is away (the outage is reported once)."""
        try:
            value = work(*args, **kwargs)
        except Exception as exc:
            if isinstance(exc, rex.OutOfMemoryError):
                return None  # Redis answers, it is full: room() reports that
            if refused_for_replicas(exc):
                return None  # Redis answers, it refuses writes until its replicas are back: replicas() reports that
            if refused_for_disk(exc):
                return None  # Redis answers, it cannot save writes (a full disk): room() reports that
            if not is_transient(exc):
                raise
            self._lost(exc)
            return None
        self._back()
        return value

    def room(self, memory: RedisMemory) -> None:
        """Redis's memory and disk this tick: at its ``maxmemory``, or unable to write its append-only file (a full
        disk), leasing pauses and ``redis-full`` fires, until it has room again."""
        refusing = memory.full or memory.unsaved
        if self.full is not None:
            if refusing:
                self.full.set()
            else:
                self.full.clear()
        used = format_bytes(memory.used)
        where = f"under {self.embedded.data_dir}" if self.embedded is not None else "on its disk"
        message = (
            f"Redis at {self.url} is at its maxmemory ({used} used) and refuses writes: leasing paused until it has "
            "room (raise its maxmemory or free memory)"
            if memory.full
            else f"Redis at {self.url} cannot write its append-only file (a full disk?) and refuses writes: leasing "
            f"paused until it can (free space {where})"
            if memory.unsaved
            else f"Redis has room again ({used} used); the node goes on"
        )
        self.alerts.report(FULL_ALERT, refusing, memory.used, 0.0, message)

    def tick_replicas(self, client: SyncClient, asked: int) -> None:
        """:meth:`replicas` each tick, also while writes are refused (no snapshot then), but not while Redis is
        away: a check that asks nothing of Redis (no barrier) must not pass for its return."""
        if not self.down:
            self.run(self.replicas, client, asked)

    def replicas(self, client: SyncClient, asked: int) -> None:
        """The replicas Redis has now against those the crawl's writes wait for: ``asked`` (``--redis-replicas``),
        or for auto those it had at the first tick, as the processes counted them at their start (0: no barrier;
        INFO refused: nothing to tell)."""
        if self._expected is None:
            self._expected = replicas_of(client, asked)
        expected = self._expected
        if expected <= 0 or self._no_info:
            return
        try:
            have = connected_replicas(client)
        except rex.ResponseError:  # a managed service's ACL: the processes' own lines say it
            self._no_info = True
            return
        message = (
            f"Redis at {self.url}: a master has {have} of the {expected} replica(s) the crawl's writes wait for (a "
            "failover promoted one, or one is down or cut off): another failover may lose its last writes (and a "
            "master with min-replicas-to-write refuses writes: the node waits for them)"
            if have < expected
            else f"Redis has its {expected} replica(s) again"
        )
        self.alerts.report(REPLICAS_ALERT, have < expected, have, expected, message)

    def too_long(self) -> str:
        """Why the node must stop ("" while the outage is shorter than the limit)."""
        if self.down_since is None or time.monotonic() - self.down_since < self.limit_s:
            return ""
        return f"Redis at {self.url} out of reach for {self.limit_s:.0f}s"

    def _lost(self, exc: BaseException) -> None:
        if self.down_since is None:
            self.down_since = time.monotonic()
            detail = one_line(exc.__cause__ or exc)
            message = f"lost the connection to Redis at {self.url} ({detail}); the node pauses until it is back"
            self.alerts.report(ALERT, True, 1.0, 0.0, message)
        if self.embedded is not None and not self.embedded.alive():
            log.info("the embedded redis-server died; starting it again from its append-only file")
            try:
                self.embedded.restart()
            except StateError as err:
                log.error("could not start the embedded redis-server again: %s", err)

    def _back(self) -> None:
        if self.down_since is None:
            return
        away = time.monotonic() - self.down_since
        self.down_since = None
        self.alerts.report(ALERT, False, 0.0, 0.0, f"Redis is back after {away:.1f}s; the node goes on")
