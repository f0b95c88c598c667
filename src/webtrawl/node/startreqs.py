"""A spider's ``start_requests()`` (by default its ``start_urls``) runs once per crawl, not once per run or per node.

Its seeds are queued in the frontier, which a resume and every node of a cluster share, so running it again would
only repeat its side effects (the API it asks for categories, the database it reads, a seed list of millions sent
through Redis again on every resume) for seeds the frontier drops as seen. One Redis key, ``P:{P:g}:start``, says
where it stands:

* absent: not run yet. A node claims it with ``SET NX`` (its node id, for :data:`CLAIM_MS`, renewed by a thread
  while it runs the method and queues the seeds), then sets it to :data:`DONE` once every seed is queued;
* the id of a node: that node is running it. Another node waits for ``done`` (or for the claim to expire, when that
  node died: then it claims it itself); the same node (restarted after a kill -9, whose id is the --out dir's) takes
  it over at once;
* ``done``: it ran; nobody runs it again.

A kill between queuing the seeds and ``done`` leaves the claim to expire: the next node to start runs the method
again, and the frontier drops the seeds it already has. No seed is lost; the side effects repeat only then. A run
that fails on the way (the method raises, a bad ``--seeds`` line) gives the claim up at once.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator

import redis

from webtrawl.frontier.connect import SyncClient
from webtrawl.frontier.keys import global_tag
from webtrawl.messages import NewUrl

log = logging.getLogger("webtrawl.node")

DONE = "done"
CLAIM_MS = 30_000  # a claim's life: renewed every third of it while its node runs start_requests()
_POLL_S = 1.0
# renew or give up a claim only while it is still this node's (another node may hold it after it expired)
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
_GIVE_UP = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


def start_key(prefix: str) -> str:
    return global_tag(prefix) + "start"


class SpiderStart:
    """A spider's seeds: ``requests`` runs its ``start_requests()`` (None: no spider); ``ready`` holds them when
    they were computed before the crawl's Redis started (a new local crawl: its errors stop it before anything)."""

    def __init__(self, requests: Callable[[], list[NewUrl]] | None = None, ready: list[NewUrl] | None = None) -> None:
        self.requests = requests
        self.ready = ready

    @contextlib.contextmanager
    def once(
        self, client: SyncClient, prefix: str, node_id: str, stopped: Callable[[], bool]
    ) -> Iterator[list[NewUrl]]:
        """The seeds this node queues in the block (none when another node did, or a stop came while waiting);
        ``done`` is set when the block ends normally, the claim given up when it raises."""
        if self.requests is None or not _claim(client, start_key(prefix), node_id, stopped):
            yield []
            return
        key = start_key(prefix)
        renewing = _Renewal(client, key, node_id)
        try:
            seeds = self.ready if self.ready is not None else self.requests()
            yield seeds
        except BaseException:
            renewing.stop()
            with contextlib.suppress(redis.RedisError):
                client.eval(_GIVE_UP, 1, key, node_id)
            raise
        renewing.stop()
        client.set(key, DONE)
        log.info("start_requests() queued %d seed(s); it does not run again in this crawl", len(seeds))


def _claim(client: SyncClient, key: str, node_id: str, stopped: Callable[[], bool]) -> bool:
    """Whether this node runs start_requests(): it claimed it, or held it before a kill. False once it ran, or
    on a stop while another node runs it (``stopped`` is asked each second of the wait, and beats the node's
    presence)."""
    waiting = ""
    while not stopped():
        client.set(key, node_id, nx=True, px=CLAIM_MS)
        held = client.get(key)
        holder = held.decode() if isinstance(held, bytes) else str(held or "")
        if holder == DONE:
            return False
        if holder == node_id:
            client.pexpire(key, CLAIM_MS)  # this node's own claim, left by a run a kill ended
            return True
        if not holder:
            continue  # its claim expired between the two calls: claim it at once
        if holder != waiting:
            waiting = holder
            log.info("node %s is running the spider's start_requests(); waiting for its seeds", holder)
        time.sleep(_POLL_S)
    return False


class _Renewal:
    """Renews a claim every third of its life, on a thread, until stopped (the user's start_requests() may run
    long without returning to us)."""

    def __init__(self, client: SyncClient, key: str, node_id: str) -> None:
        self._client, self._key, self._node = client, key, node_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="webtrawl-start-claim", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(CLAIM_MS / 3000):
            try:
                self._client.eval(_RENEW, 1, self._key, self._node, CLAIM_MS)
            except redis.RedisError as exc:  # Redis away a moment: the next renewal may reach it
                log.warning("could not renew the start_requests() claim: %s", exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
