"""Nodes of a shared crawl: who they are, that they are alive, and whether someone asked them to stop.

Every node that crawls from a shared Redis (``--redis``) announces itself; all keys live in the crawl's global slot
(``P:{P:g}:``, see :mod:`webtrawl.frontier.keys`), so they sit on one cluster master next to the crawl's meta::

    node:<id>   hash with a TTL, rewritten every heartbeat: host, pid, out, state, started, seen, fetched, rate,
                leases, fetchers, parsers, rss, cpu, written / downloaded (bytes), alerts (names of those firing).
                A node that dies stops refreshing it and it expires: status shows it lost.
    nodes       zset id -> last heartbeat (unix ms): the nodes ``trawl status`` lists, also after they left
    stop        integer, INCR by ``trawl stop``: a node drains and exits when it grows past the value it saw at
                start. A counter, not a flag, so that nodes started after a stop crawl normally (no clock involved).
    fetched     hash id -> pages the node fetched over all its runs (HINCRBY by each heartbeat's increase, no
                TTL): a restarted node goes on from its earlier total instead of from zero, and a lost node
                still shows what it fetched.
    where       hash id -> "host:out" of the node's last run: status names the machine of a lost node. Dropped
                with the node from ``nodes`` (a deployment's pods each have a new id).

Fetchers report what the heartbeat needs through :class:`FetcherStats`, a small shared-memory array.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webtrawl.errors import InputError, StateError
from webtrawl.frontier.connect import SyncClient
from webtrawl.frontier.keys import global_tag, stop_key, text
from webtrawl.wholefile import replace_whole

DEFAULT_NODE_ID = "local"  # CrawlConfig's default: a trawl node replaces it with a persisted hostname-XXXXXX
NODE_ID_FILE = "node-id"
LEFT_TTL_S = 86_400  # a node that left cleanly stays listed (state "stopped") this long
_FORGET_AFTER_MS = 86_400_000  # nodes not seen for a day are dropped from the list
_BAD_ID_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")


def heartbeat_ttl(lease_ttl_s: float) -> float:
    """A node silent for longer than its lease TTL has lost its leases anyway: show it as lost by then (3-15 s)."""
    return min(15.0, max(3.0, lease_ttl_s))


def _keys(prefix: str) -> tuple[str, str, str]:
    tag = global_tag(prefix)
    return tag + "node:", tag + "nodes", stop_key(prefix)


def _fetched_key(prefix: str) -> str:
    return global_tag(prefix) + "fetched"


def _where_key(prefix: str) -> str:
    return global_tag(prefix) + "where"


def resolve_node_id(out: Path, configured: str) -> str:
    """``--node-id`` if given, else the id this --out dir got on its first run (hostname + 6 hex digits)."""
    if configured != DEFAULT_NODE_ID:
        return configured
    path = out / NODE_ID_FILE
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        saved = path.read_text().strip()
        if saved:
            return saved
    host = _BAD_ID_CHARS.sub("-", socket.gethostname()).strip("-.")[:48] or "node"
    node_id = f"{host}-{secrets.token_hex(3)}"
    try:  # an --out that is a file: NotADirectoryError above, FileExistsError here
        out.mkdir(parents=True, exist_ok=True)
        replace_whole(path, f"{node_id}\n".encode())
    except OSError as exc:  # as startup.prepare_out says it
        raise InputError(f"output directory {out} is not writable: {exc.strerror or exc}") from None
    return node_id


@dataclass
class NodeStatus:
    """One node as ``trawl status`` shows it."""

    node_id: str
    state: str  # crawling, waiting, draining, stopped; "lost" when its heartbeat expired without a clean stop
    seen_ms: int
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def live(self) -> bool:
        return self.state not in ("lost", "stopped")

    def number(self, name: str) -> float:
        try:
            return float(self.fields.get(name, 0))
        except ValueError:
            return 0.0

    def as_dict(self, now_ms: int) -> dict[str, Any]:
        return {
            "id": self.node_id,
            "state": self.state,
            "live": self.live,
            "seen_s_ago": max(0.0, (now_ms - self.seen_ms) / 1000.0),
            "host": self.fields.get("host", ""),
            "out": self.fields.get("out", ""),
            "pid": int(self.number("pid")),
            "fetched": int(self.number("fetched")),
            "rate": self.number("rate"),
            "leases": int(self.number("leases")),
            "fetchers": int(self.number("fetchers")),
            "parsers": int(self.number("parsers")),
            "rss": int(self.number("rss")),
            "cpu": self.number("cpu"),
            "written": int(self.number("written")),
            "downloaded": int(self.number("downloaded")),
            "alerts": [a for a in self.fields.get("alerts", "").split(",") if a] if self.live else [],
        }


def list_nodes(client: SyncClient, prefix: str) -> list[NodeStatus]:
    """Nodes seen within the last day, live ones first; two round trips whatever the number of nodes.

    A lost node's entry has expired: it is shown with its total of pages and the place of its last run."""
    node_key, nodes_key, _ = _keys(prefix)
    members: list[tuple[Any, float]] = list(client.zrange(nodes_key, 0, -1, withscores=True))  # type: ignore[arg-type]
    if not members:
        return []
    ids = [text(member) for member, _score in members]
    pipe = client.pipeline(transaction=False)
    for node_id in ids:
        pipe.hgetall(node_key + node_id)
    pipe.hmget(_fetched_key(prefix), ids)
    pipe.hmget(_where_key(prefix), ids)
    *entries, totals, places = pipe.execute()
    found = []
    for node_id, (_member, score), raw, total, place in zip(ids, members, entries, totals, places, strict=True):
        values = {text(k): text(v) for k, v in raw.items()}
        if not values:
            host, _, out = text(place or b"").partition(":")
            values = {"state": "lost", "fetched": text(total or b"0"), "host": host, "out": out}
        found.append(NodeStatus(node_id, values.get("state", "lost"), int(score), values))
    found.sort(key=lambda n: (not n.live, n.node_id))
    return found


def request_stop(client: SyncClient, prefix: str, node_id: str = "") -> int:
    """Ask every running node (or the one ``node_id``) to drain and exit; returns the new stop generation."""
    key = _keys(prefix)[2]
    return int(client.incr(f"{key}:{node_id}" if node_id else key))


class StopWatch:
    """Whether ``trawl stop`` was asked since this node started (of every node, or of this one): the stop
    generations read at start, compared. Every node keeps one, apart from its :class:`Presence`: a crawl on one
    machine obeys ``trawl stop --out`` without announcing itself."""

    def __init__(self, client: SyncClient, prefix: str, node_id: str) -> None:
        self.client = client
        key = _keys(prefix)[2]
        self._keys = (key, f"{key}:{node_id}")  # one slot on a cluster: the crawl's global tag
        self._seen = self._generations()

    def _generations(self) -> list[int]:
        return [int(value or 0) for value in self.client.mget(self._keys)]

    def stop_requested(self) -> bool:
        return any(now > seen for now, seen in zip(self._generations(), self._seen, strict=True))


class Presence:
    """This node's entry: claimed at start, refreshed by :meth:`beat`, marked stopped by :meth:`leave`."""

    def __init__(self, client: SyncClient, prefix: str, node_id: str, out: Path, ttl_s: float) -> None:
        self.client = client
        self.node_id = node_id
        self.ttl_ms = max(1000, round(ttl_s * 1000))
        self.interval = ttl_s / 5
        node_key, self._nodes_key, _ = _keys(prefix)
        self._key = node_key + node_id
        self._static = {
            "host": socket.gethostname(),
            "pid": str(os.getpid()),
            "out": str(out.resolve()),
            "started": str(int(time.time() * 1000)),
        }
        self._last_beat = float("-inf")
        self._fetched_key = _fetched_key(prefix)
        self._where_key = _where_key(prefix)
        self._fetched_before = 0  # pages fetched by this node's earlier runs
        self._fetched_counted = 0  # pages of this run already added to the node's total in Redis

    def claim(self) -> None:
        """Refuse to run beside a live node of the same id elsewhere (they would take each other's leases back)."""
        raw = self.client.hgetall(self._key)
        other = {text(k): text(v) for k, v in raw.items()}
        if other and other.get("state") != "stopped":
            same_place = (other.get("host"), other.get("out")) == (self._static["host"], self._static["out"])
            if not same_place:  # the same place is our own earlier run: node.lock proves it is gone
                raise StateError(
                    f"node id {self.node_id!r} is in use by a live node on {other.get('host')} "
                    f"(out {other.get('out')}): give this node another --node-id"
                )
        self._fetched_before = int(self.client.hget(self._fetched_key, self.node_id) or 0)
        self.client.hset(self._where_key, self.node_id, f"{self._static['host']}:{self._static['out']}")
        forgotten = self.client.zrangebyscore(self._nodes_key, "-inf", int(time.time() * 1000) - _FORGET_AFTER_MS)
        if forgotten:  # with their places: a deployment's every pod has a new id, the hash would only grow
            pipe = self.client.pipeline(transaction=False)
            pipe.zrem(self._nodes_key, *forgotten)
            pipe.hdel(self._where_key, *forgotten)
            pipe.execute()

    def due(self, now: float) -> bool:
        return now - self._last_beat >= self.interval

    def beat(self, state: str, stats: dict[str, int | float | str], ttl_ms: int | None = None) -> None:
        """Write this node's entry and its TTL (one round trip: all keys share the global slot).

        ``stats["fetched"]`` counts this run's pages; the entry shows the node's total over all its runs."""
        self._last_beat = time.monotonic()
        now_ms = int(time.time() * 1000)
        mapping: dict[str, str] = {**self._static, "state": state, "seen": str(now_ms)}
        mapping.update({k: f"{v:.3f}" if isinstance(v, float) else str(v) for k, v in stats.items()})
        pipe = self.client.pipeline(transaction=False)
        if "fetched" in stats:
            run_fetched = int(stats["fetched"])
            mapping["fetched"] = str(self._fetched_before + run_fetched)
            if run_fetched > self._fetched_counted:
                pipe.hincrby(self._fetched_key, self.node_id, run_fetched - self._fetched_counted)
                self._fetched_counted = run_fetched
        pipe.hset(self._key, mapping=mapping)  # type: ignore[arg-type]
        pipe.pexpire(self._key, ttl_ms or self.ttl_ms)
        pipe.zadd(self._nodes_key, {self.node_id: now_ms})
        pipe.execute()

    def leave(self, stats: dict[str, int | float | str]) -> None:
        """A clean exit: the entry stays a day with state ``stopped`` so status can tell it from a lost node."""
        self.beat("stopped", stats, LEFT_TTL_S * 1000)
