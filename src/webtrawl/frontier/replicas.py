"""The replica barrier (``--redis-replicas N``): a page is completed only once the links it added are on N replicas.

Redis replicates asynchronously: a master killed -9 may take its last writes with it, and the replica promoted in
its place never saw them. On one master that loses a suffix of the history, which a completion after its links
survives consistently; but a crawl's shards live on several masters, so a page's completion (on the URL's master)
could survive while the links it added (on other masters) were lost with theirs: URLs lost for good. ``WAIT N``
after the parser's add calls, on each master they went to and on the same connection (WAIT counts that
connection's writes), closes that gap. A replica that does not answer in time costs ``WAIT_MS`` and one log line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis

from webtrawl.frontier.scripts import Call, Steps

log = logging.getLogger("webtrawl.frontier")

WAIT_MS = 300  # a replica acknowledges a WAIT at once (GETACK); this is for one that is gone
_SHORT_S = 30.0  # a master whose replicas fell short is not waited for this long (then asked again)
_short_until: dict[str, float] = {}  # key (or "" on one server) -> monotonic time to wait for its replicas again


def replicas_of(client: Any, asked: int) -> int:
    """``asked``, or for -1 (auto) the replicas Redis has: a master's connected replicas, on a cluster the fewest
    any master has (0 on a single server or a cluster without replicas: no barrier)."""
    if asked >= 0:
        return asked
    try:
        return connected_replicas(client)
    except redis.ResponseError as exc:
        return _no_info(exc)


def connected_replicas(client: Any) -> int:
    """The replicas Redis has now (the fewest of any master on a cluster); ResponseError if INFO is refused."""
    if hasattr(client, "get_primaries"):
        return _fewest(client.info("replication", target_nodes="primaries"))
    return _fewest(client.info("replication"))


async def replicas_of_async(client: Any, asked: int) -> int:
    """:func:`replicas_of` on an asyncio client (the fetchers')."""
    if asked >= 0:
        return asked
    try:
        if hasattr(client, "get_primaries"):
            return _fewest(await client.info("replication", target_nodes="primaries"))
        return _fewest(await client.info("replication"))
    except redis.ResponseError as exc:
        return _no_info(exc)


def _fewest(infos: dict[str, Any]) -> int:
    """The fewest connected replicas in one INFO reply or a cluster's per-node replies."""
    found = infos.values() if "connected_slaves" not in infos else [infos]
    return min((int(info.get("connected_slaves", 0)) for info in found), default=0)


def _no_info(exc: BaseException) -> int:
    """INFO not allowed (a managed service's ACL): no barrier unless asked."""
    log.warning("cannot count the Redis replicas (%s): give --redis-replicas N for the replica barrier", exc)
    return 0


NodeOf = Callable[[str], str]  # a written key -> the master it went to ("" on a single server)


def one_server(key: str) -> str:
    """A plain Redis: every key is on the one master."""
    return ""


def node_of_cluster(client: Any) -> NodeOf:
    """A cluster client's master of a key (host:port, from its slot map), or the key itself while the map cannot
    say (a slot not covered mid-failover): a WAIT then goes per key, as many as are needed, never too few."""

    def node(key: str) -> str:
        try:
            return str(client.get_node_from_key(key).name)
        except Exception:  # any doubt: the key's own WAIT, routed when it is queued
            return key

    return node


def replicated(calls: list[Call], replicas: int, node_of: NodeOf) -> Steps[list[Any]]:
    """The replies of ``calls`` (script runs), which with ``replicas`` > 0 are on that many replicas of each master
    they went to when this returns (WAIT on the same connection, in the same pipeline), or one log line says not."""
    replies, _ = yield from acknowledged(calls, replicas, node_of)
    return replies


def acknowledged(calls: list[Call], replicas: int, node_of: NodeOf) -> Steps[tuple[list[Any], bool]]:
    """:func:`replicated`, and whether every master they went to acknowledged them (True with no barrier asked): a
    master skipped for its replicas falling short, or one that fell short now, may lose them in a failover."""
    keys = [c.keys[0] for c in calls]
    waits = replica_waits(keys, replicas, node_of)
    replies = yield [*calls, *(call for _, call in waits)]
    acks = replies[len(calls) :]
    check_acks([node for node, _ in waits], acks, replicas)
    whole = replicas <= 0 or (len(waits) == len({node_of(k) for k in keys}) and all(int(r) >= replicas for r in acks))
    return replies[: len(calls)], whole


def replica_waits(keys: Sequence[str], replicas: int, node_of: NodeOf) -> list[tuple[str, Call]]:
    """WAIT calls to append to a pipeline whose calls wrote ``keys``, with the master each is for: one per master
    (routed there by one of its keys). One per key would cost a master whose replica is gone the full timeout per
    key, one after the other (a batch's 20 shards there: 6 s). A master whose replicas fell short lately (a failover
    took one away) is skipped for a while, not waited for batch after batch."""
    if replicas <= 0 or not keys:
        return []
    now = time.monotonic()
    nodes: dict[str, str] = {}
    for key in keys:
        nodes.setdefault(node_of(key), key)
    return [
        (node, Call(("WAIT", replicas, WAIT_MS), near=key if node else None))
        for node, key in nodes.items()
        if _short_until.get(node, 0.0) <= now
    ]


def check_acks(nodes: Sequence[str], replies: Sequence[Any], replicas: int) -> None:
    """A WAIT that came back with fewer replicas than asked: one log line (at most a minute; INFO, in the process's
    own log: a replica missing is the node's ``redis-replicas`` alert), its master skipped."""
    short = [(node, int(r)) for node, r in zip(nodes, replies, strict=True) if int(r) < replicas]
    if not short:
        return
    now = time.monotonic()
    for node, _ in short:
        _short_until[node] = now + _SHORT_S
    if now - _short_until.get("log", float("-inf")) >= 60.0:  # a master's name is host:port, never "log"
        _short_until["log"] = now
        acked = min(n for _, n in short)
        log.info(
            "only %d of %d Redis replicas acknowledged our last writes within %d ms (one is down or behind); "
            "not waiting for them there for %.0fs",
            acked,
            replicas,
            WAIT_MS,
            _SHORT_S,
        )
