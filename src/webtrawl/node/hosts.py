"""Per-host state read from the frontier: the dashboard's slowest and most failing hosts, and ``trawl status
--host NAME``, which explains why a host is slow or parked.

Everything comes from the host's keys (see :mod:`webtrawl.frontier.keys`): ``h:<host>`` (next-allowed ``n``,
consecutive failures ``f``, last gap ``d``, lease ``l``, URLs admitted ``a``), its queues ``q:<host>`` (one per
priority level), its score in a ``ready`` set and the cached robots.txt ``r:<origin>``. Read-only: nothing here
changes the crawl.

The host lists sample the hosts that wait longest (the top of each shard's ``ready`` set by next-allowed time: the
backed-off, parked and Crawl-delay hosts), a few per shard, in two pipelined round trips: no scan of all hosts.
"""

from __future__ import annotations

from typing import Any

from webtrawl.frontier.connect import SyncClient, is_cluster
from webtrawl.frontier.keys import decode_entry, meta_key, queue_key, ready_key, shard_of, shard_tag, text
from webtrawl.names import PRIORITY_LEVELS

_PER_SHARD = 4


def redis_now_ms(client: SyncClient) -> int:
    """The Redis clock (next-allowed times are on it); on a cluster, the first master's."""
    reply: Any = client.time(target_nodes="primaries") if is_cluster(client) else client.time()
    if isinstance(reply, dict):
        reply = next(iter(reply.values()))
    seconds, micros = reply
    return int(seconds) * 1000 + int(micros) // 1000


def _shards(client: SyncClient, prefix: str) -> int:
    return int(client.hget(meta_key(prefix), "shards") or 0)


def _int(value: Any) -> int:
    try:
        return int(text(value)) if value is not None else 0
    except ValueError:
        return 0


def _row(host: str, fields: list[Any], queued: int, now_ms: int) -> dict[str, Any]:
    n, f, d, lease = fields
    return {
        "host": host,
        "wait_ms": max(0, _int(n) - now_ms),
        "failures": _int(f),
        "gap_ms": _int(d),
        "queued": queued,
        "leased": lease is not None,
    }


def sample_hosts(client: SyncClient, prefix: str, limit: int = 10) -> dict[str, list[dict[str, Any]]]:
    """``{"slowest": [...], "failing": [...]}`` among the hosts waiting longest (see the module docstring)."""
    shards = _shards(client, prefix)
    if not shards:
        return {"slowest": [], "failing": []}
    now_ms = redis_now_ms(client)
    pipe = client.pipeline(transaction=False)
    for shard in range(shards):
        for level in range(PRIORITY_LEVELS):
            pipe.zrange(ready_key(shard_tag(prefix, shard), level), -_PER_SHARD, -1)
    found_hosts = pipe.execute()
    hosts = [
        (shard, text(h))
        for shard in range(shards)
        for found in found_hosts[shard * PRIORITY_LEVELS : (shard + 1) * PRIORITY_LEVELS]
        for h in found
    ]
    if not hosts:
        return {"slowest": [], "failing": []}
    pipe = client.pipeline(transaction=False)
    for shard, host in hosts:
        sp = shard_tag(prefix, shard)
        pipe.hmget(sp + "h:" + host, "n", "f", "d", "l")
        for level in range(PRIORITY_LEVELS):
            pipe.llen(queue_key(sp, host, level))
    replies = pipe.execute()
    step = 1 + PRIORITY_LEVELS
    rows = [
        _row(host, replies[step * i], sum(int(n) for n in replies[step * i + 1 : step * (i + 1)]), now_ms)
        for i, (_, host) in enumerate(hosts)
    ]
    slowest = sorted(rows, key=lambda r: (-r["gap_ms"], -r["wait_ms"], r["host"]))[:limit]
    failing = sorted((r for r in rows if r["failures"]), key=lambda r: (-r["failures"], -r["wait_ms"], r["host"]))
    return {"slowest": slowest, "failing": failing[:limit]}


def host_report(client: SyncClient, prefix: str, host: str, park_after: int = 8) -> dict[str, Any]:
    """Everything the frontier knows about one host, and why it is (not) being fetched now."""
    from webtrawl.politeness.robots import RobotsRules

    host = host.strip().lower()
    shards = _shards(client, prefix)
    if not shards:
        return {"host": host, "known": False, "why": ["no crawl in this Redis (no meta)"]}
    shard = shard_of(host, shards)
    sp = shard_tag(prefix, shard)
    now_ms = redis_now_ms(client)
    pipe = client.pipeline(transaction=False)
    pipe.hgetall(sp + "h:" + host)
    for level in range(PRIORITY_LEVELS):
        pipe.llen(queue_key(sp, host, level))
    for level in range(PRIORITY_LEVELS):
        pipe.zscore(ready_key(sp, level), host)
    for level in range(PRIORITY_LEVELS):
        pipe.lrange(queue_key(sp, host, level), 0, 2)
    replies = pipe.execute()
    raw = replies[0]
    queued = sum(int(n) for n in replies[1 : 1 + PRIORITY_LEVELS])
    ready_score = next((r for r in replies[1 + PRIORITY_LEVELS : 1 + 2 * PRIORITY_LEVELS] if r is not None), None)
    head = [e for found in replies[1 + 2 * PRIORITY_LEVELS :] for e in found][:3]
    h = {text(k): text(v) for k, v in raw.items()}
    doc: dict[str, Any] = {
        "host": host,
        "shard": shard,
        "known": bool(h) or bool(queued),
        "origin": h.get("o", ""),
        "queued": int(queued),
        "next_urls": [decode_entry(text(e), h.get("o", "")).url for e in head],  # entries hold depth and path
        "admitted": int(h.get("a", 0) or 0),
        "failures": int(h.get("f", 0) or 0),
        "last_gap_s": int(h.get("d", 0) or 0) / 1000,
        "next_allowed_in_s": None,
        "in_ready_set": ready_score is not None,
        "leased": bool(h.get("l")),
        "lease_token": h.get("l", ""),
        "robots": None,
    }
    if "n" in h:
        doc["next_allowed_in_s"] = (int(h["n"]) - now_ms) / 1000
    if doc["origin"]:
        robots_key = sp + "r:" + doc["origin"]
        pipe = client.pipeline(transaction=False)
        pipe.get(robots_key)
        pipe.pttl(robots_key)
        value, ttl = pipe.execute()
        if value is not None:
            try:
                rules = RobotsRules.decode(bytes(value))
                doc["robots"] = {
                    "cached": True,
                    "expires_in_s": int(ttl) / 1000 if int(ttl) > 0 else None,
                    "status": rules.status,
                    "unavailable": rules.unavailable,
                    "error": rules.error,
                    "crawl_delay_s": rules.crawl_delay,
                    "bytes": rules.body_bytes,
                }
            except ValueError:
                doc["robots"] = {"cached": True, "error": "unreadable cache entry"}
        else:
            doc["robots"] = {"cached": False}
    doc["why"] = _explain(doc, park_after)
    return doc


def _explain(doc: dict[str, Any], park_after: int) -> list[str]:
    if not doc["known"]:
        return ["the frontier has no state for this host: no URL of it was ever admitted (check the spelling; "
                "the name is lower-case, without port)"]  # fmt: skip
    why: list[str] = []
    wait = doc["next_allowed_in_s"]
    if doc["leased"]:
        why.append("a fetcher holds the host now (a request is in flight or its host session is running)")
    elif not doc["queued"]:
        why.append("nothing is queued for this host: it is done unless new links to it are found")
    elif wait is not None and wait > 0:
        why.append(f"waiting {wait:.1f}s for its next-allowed time")
    else:
        why.append("due now: the next free fetcher takes it")
    if doc["failures"]:
        if park_after and doc["failures"] >= park_after:
            why.append(f"parked: {doc['failures']} failures in a row (--park-after {park_after}) give it the longest "
                       "back-off (--backoff-max), and each failure gives up its queued URLs (host-down); one success "
                       "resets it")  # fmt: skip
        else:
            why.append(f"backing off: {doc['failures']} failures in a row, the wait doubles with each")
    robots = doc["robots"] or {}
    if robots.get("unavailable"):
        why.append(f"its robots.txt is unavailable ({robots.get('error') or 'no answer'}): nothing is fetched "
                   "until it answers")  # fmt: skip
    if robots.get("crawl_delay_s"):
        why.append(f"robots.txt asks for Crawl-delay {robots['crawl_delay_s']:g}s (capped by --max-crawl-delay)")
    if doc["last_gap_s"] > 1.0:
        why.append(f"its politeness gap is {doc['last_gap_s']:g}s per request")
    if doc["queued"] and not doc["in_ready_set"] and not doc["leased"]:
        why.append("queued but not in the ready set and not leased: it will be picked up when a lease is reclaimed")
    return why


def format_host_report(doc: dict[str, Any]) -> str:
    lines = [f"host {doc['host']}"]
    if doc.get("known"):
        nxt = doc["next_allowed_in_s"]
        robots = doc["robots"] or {}
        if robots.get("cached"):
            expires = robots.get("expires_in_s")
            robots_text = (
                f"cached, status {robots.get('status')}, {robots.get('bytes', 0)} bytes"
                + (f", expires in {expires:.0f}s" if expires else "")
                + (", unavailable" if robots.get("unavailable") else "")
            )
        else:
            robots_text = "not cached (fetched before the host's next URL)"
        rows = [
            ("origin", doc["origin"] or "-"),
            ("shard", str(doc["shard"])),
            ("queued", str(doc["queued"])),
            ("admitted", str(doc["admitted"])),
            ("next-allowed", "-" if nxt is None else (f"in {nxt:.1f}s" if nxt > 0 else f"{-nxt:.1f}s ago")),
            ("failures", str(doc["failures"])),
            ("last-gap", f"{doc['last_gap_s']:g}s"),
            ("leased", doc["lease_token"] or "no"),
            ("in-ready-set", "yes" if doc["in_ready_set"] else "no"),
            ("robots", robots_text),
            ("crawl-delay", f"{robots['crawl_delay_s']:g}s" if robots.get("crawl_delay_s") else "-"),
            ("next-urls", ", ".join(doc["next_urls"]) or "-"),
        ]
        lines.extend(f"  {name}: {value}" for name, value in rows)
    lines.append("why")
    lines.extend(f"  - {line}" for line in doc["why"])
    return "\n".join(lines) + "\n"
