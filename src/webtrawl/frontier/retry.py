"""Riding out a Redis that is away for a while: a restart (AOF reloaded), a cluster failover, a network cut.

A fetcher or parser must not die on a lost connection: its frontier is given an :class:`Outage`, and a call that
fails with a transport error (connection refused or closed, a timeout, ``LOADING`` while a restarted server reads
its AOF, ``CLUSTERDOWN``/``TRYAGAIN``/``READONLY`` while a cluster elects a new master, a replica barrier's ``WAIT``
refused by a master just demoted) or with ``OOM`` (Redis at its ``maxmemory``), ``NOREPLICAS`` (its
``min-replicas-to-write`` not met) or ``MISCONF`` (it cannot write its append-only file or snapshot: a full disk;
any way a script is refused before its first write, so sending it again is safe) is sent again with exponential
back-off until Redis answers, or until the process is told to stop (then :class:`RedisUnavailable` is raised).
Only the calls that failed are sent again.
Sending a call twice is safe: a second ``add`` finds its URLs seen, a second ``release`` or ``complete`` finds its
token gone (stale, counted, no effect), a second ``lease`` carries the first one's request id and gets its leases
again (lease.lua). The first failure of an outage and the recovery are one log line each
(INFO: the supervisor's alert is the line an operator sees).
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis
import redis.exceptions as rex

from webtrawl.errors import RedisUnavailable
from webtrawl.frontier.connect import lost_connection, one_line, transport_errors

log = logging.getLogger("webtrawl.frontier")

T = TypeVar("T")

_FIRST_S = 0.05
_MAX_S = 2.0
_STOP_LOOK_S = 0.1  # how often a wait looks at the stop: a stopping fetcher has a few seconds to end (drain)
_NOSCRIPT_ROUNDS = 1  # without an outage: load the scripts once, as after a restart
_WAIT_ON_REPLICA = "WAIT cannot be used with replica instances"
_NOSCRIPT_ROUNDS_WAITING = 8  # waiting out an outage: a failover between SCRIPT LOAD and EVALSHA may need more
_DEMOTED_S = 1.0  # WAITs refused by a demoted master for this long are not an outage (longer: a stale slot map)


def refused_for_replicas(exc: object) -> bool:
    """NOREPLICAS: a master with ``min-replicas-to-write`` refuses writes while too few replicas follow it (one died
    or is cut off). A script is refused at its first write, so sending it again once they are back is safe."""
    return _refused_with(exc, "NOREPLICAS ")


def refused_for_disk(exc: object) -> bool:
    """MISCONF: Redis cannot save what it is given (its append-only file or snapshot failed to write: a full disk) and
    refuses every write until it can again, by itself once there is space. A script is refused at its first write
    (the refusal holds for the whole script), so sending it again then is safe."""
    return _refused_with(exc, "MISCONF ")


def _refused_with(exc: object, prefix: str) -> bool:
    """A Redis error reply starting with ``prefix``; raised from a pipeline, redis-py puts the command first."""
    if not isinstance(exc, redis.ResponseError):
        return False
    text = str(exc)
    return text.startswith(prefix) or f" of pipeline caused error: {prefix}" in text


def _torn_down(exc: object) -> bool:
    """On a failover redis-py's async cluster pipeline closes the client's every connection, also those other tasks
    are using: their commands fail on the torn-down stream (uvloop "handler is closed", or a writer or node that is
    None now). The connection is gone, not the code broken: send again."""
    return isinstance(exc, RuntimeError | AttributeError) and ("closed" in str(exc) or "'NoneType'" in str(exc))


def is_transient(exc: object) -> bool:
    """Whether ``exc`` (raised, or a pipeline's reply) means Redis is away for now rather than a bug."""
    if isinstance(exc, rex.MaxConnectionsError):
        return False  # our own pool is too small: waiting would not help
    if type(exc) is rex.RedisClusterException:  # "cannot be connected": no startup node answers
        return True
    if _torn_down(exc):
        return True
    if _refused_with(exc, _WAIT_ON_REPLICA):
        return True  # a replica barrier's WAIT sent to a master a failover just demoted (slot map not yet new)
    if refused_for_replicas(exc) or refused_for_disk(exc):
        return True
    return isinstance(
        exc,
        redis.ConnectionError  # BusyLoadingError (LOADING) included
        | redis.TimeoutError
        | rex.ClusterDownError  # MasterDownError included
        | rex.TryAgainError
        | rex.ReadOnlyError
        | rex.SlotNotCoveredError
        | rex.OutOfMemoryError  # at its maxmemory (noeviction): room comes back when memory is freed or raised
        | RedisUnavailable
        | OSError,
    )


class Outage:
    """One process's wait for Redis. ``stop()`` true: give up at once (the process is draining)."""

    def __init__(self, name: str, stop: Callable[[], bool] | None = None, level: int = logging.INFO) -> None:
        self.name = name
        self.stop = stop or (lambda: False)
        self.level = level
        self.down_since: float | None = None
        self.outages = 0
        self._failures = 0
        self._demoted = (float("-inf"), float("-inf"))  # the first and last of a run of WAITs a demoted master refused
        self._answered = float("-inf")  # when the last call that was answered had been sent
        self._rng = random.Random()

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, exc: BaseException) -> float:
        """A call failed with a transient error: seconds to wait before the next try (RedisUnavailable if
        stopping)."""
        if self.stop():
            raise lost_connection(exc) from exc
        now = time.monotonic()
        if self.down_since is None and _refused_with(exc, _WAIT_ON_REPLICA):
            # A planned failover (CLUSTER FAILOVER): the call ran on the new master (MOVED), only the barrier's WAIT
            # went to the old one by the slot map of before. Redis answers: not an outage, which would make the
            # fetchers give back every lease they were about to fetch under (fetch/fence.py). Sent again soon.
            if now - self._demoted[1] > _DEMOTED_S:  # a new failover
                self._demoted = (now, now)
            self._demoted = (self._demoted[0], now)
            if now - self._demoted[0] < _DEMOTED_S:
                return _FIRST_S
        if self.down_since is None and _torn_down(exc) and now - self._demoted[0] < _DEMOTED_S:
            return _FIRST_S  # the same failover: the client tearing down its connections as it learns the new map
        if self.down_since is None:
            self.down_since = now
            self.outages += 1
            self._failures = 0
            state = "full" if isinstance(exc, rex.OutOfMemoryError) else "away"
            state = "refusing writes: too few replicas" if refused_for_replicas(exc) else state
            state = "refusing writes: it cannot save them" if refused_for_disk(exc) else state
            log.log(self.level, "%s: Redis is %s (%s); waiting for it", self.name, state, one_line(exc))
        self._failures += 1
        delay = min(_MAX_S, _FIRST_S * 2 ** min(self._failures - 1, 16))
        return float(delay * self._rng.uniform(0.5, 1.0))

    def pauses(self, exc: BaseException) -> list[float]:
        """The wait after ``exc`` (:meth:`failed`) in slices: a stop that comes during it ends it at the next."""
        left = self.failed(exc)
        return [_STOP_LOOK_S] * int(left // _STOP_LOOK_S) + [left % _STOP_LOOK_S]

    def stopped(self, exc: BaseException) -> None:
        """Raise for ``exc`` as RedisUnavailable if the process is told to stop (between two slices of a wait)."""
        if self.stop():
            raise lost_connection(exc) from exc

    async def wait(self, exc: BaseException) -> None:
        """Sleep out the wait after ``exc``; RedisUnavailable as soon as the process is told to stop."""
        for pause in self.pauses(exc):
            await asyncio.sleep(pause)
            self.stopped(exc)

    def wait_sync(self, exc: BaseException) -> None:
        for pause in self.pauses(exc):
            time.sleep(pause)
            self.stopped(exc)

    def answered(self, sent_at: float) -> None:
        """A call sent at ``sent_at`` (time.monotonic()) was answered."""
        self._answered = max(self._answered, sent_at)

    def ok(self) -> None:
        """A call succeeded: the outage is over if a call sent after it began was answered. Concurrent tasks share
        the outage, and one sent before it (answered just before, read after) proves nothing."""
        if self.down_since is not None and self._answered >= self.down_since:
            log.log(self.level, "%s: Redis is back after %.1fs", self.name, time.monotonic() - self.down_since)
            self.down_since = None


def waiting(exc: Exception, outage: Outage | None) -> Outage:
    """The outage to wait in after ``exc``; raises ``exc`` (a lost connection as RedisUnavailable) if it is not
    one to wait out."""
    if outage is None or not is_transient(exc):
        if isinstance(exc, transport_errors()):
            raise lost_connection(exc) from exc
        raise exc
    return outage


@dataclass(frozen=True, slots=True)
class Redo:
    again: list[int]  # indexes of the calls to send again
    transient: Exception | None  # the first transient error among them: wait before sending
    noscript: bool  # some answered NOSCRIPT: load the scripts first


def redo(replies: Sequence[Any], outage: Outage | None, loads: int) -> Redo:
    """What to send again after the scripts were loaded ``loads`` times: NOSCRIPT answers (the server restarted or
    flushed its scripts; a few times only, so a bug cannot loop) and, with an ``outage``, transient errors (until
    Redis is back)."""
    again: list[int] = []
    transient: Exception | None = None
    noscript = False
    load = loads < (_NOSCRIPT_ROUNDS_WAITING if outage is not None else _NOSCRIPT_ROUNDS)
    for i, reply in enumerate(replies):
        if isinstance(reply, rex.NoScriptError) and load:
            again.append(i)
            noscript = True
        elif outage is not None and isinstance(reply, Exception) and is_transient(reply):
            again.append(i)
            transient = transient or reply
    return Redo(again, transient, noscript)


def refresh_slots(client: Any) -> None:
    """After a failover a cluster client must learn the new slot map (the old master is gone or a replica now).
    The async cluster client does it by itself (and a second initialize() racing its own would close connections
    in use); the sync one is asked here."""
    manager = getattr(client, "nodes_manager", None)
    if manager is None:
        return
    try:
        manager.initialize()
    except Exception as exc:  # the cluster is still electing: the next try asks again
        log.debug("slot map refresh failed: %s", exc)


def open_waiting(opener: Callable[[], T], outage: Outage) -> T:
    """``opener()`` (connect, open the frontier) again until Redis answers: a process started or restarted during
    an outage waits for it like the others instead of dying and being restarted in a loop."""
    while True:
        sent_at = time.monotonic()
        try:
            value = opener()
        except Exception as exc:
            waiting(exc, outage)  # raises what is not worth waiting for
            outage.wait_sync(exc)
            continue
        outage.answered(sent_at)
        outage.ok()
        return value


async def open_waiting_async(opener: Callable[[], Awaitable[T]], outage: Outage) -> T:
    while True:
        sent_at = time.monotonic()
        try:
            value = await opener()
        except Exception as exc:
            waiting(exc, outage)
            await outage.wait(exc)
            continue
        outage.answered(sent_at)
        outage.ok()
        return value
