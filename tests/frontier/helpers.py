"""Small helpers for the frontier tests: build URLs, look at what really is in Redis, move a host's clock."""

from __future__ import annotations

from collections.abc import Iterable

from webtrawl.frontier import Release, UrlAction
from webtrawl.frontier.bloom import bloom_chain, chain_spec
from webtrawl.frontier.keys import meta_key, queue_key, ready_key, shard_tag
from webtrawl.frontier.redis_frontier import RedisFrontier
from webtrawl.messages import Completion, Lease, NewUrl
from webtrawl.names import PRIORITY_LEVELS


def _s(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def new_urls(*urls: str, depth: int = 0) -> list[NewUrl]:
    return [NewUrl(u, depth=depth) for u in urls]


def host_key(f: RedisFrontier, host: str, kind: str) -> str:
    return shard_tag(f.core.settings.prefix, f.shard_of(host)) + f"{kind}:{host}"


def host_state(f: RedisFrontier, host: str) -> dict[str, str]:
    raw = f.client.hgetall(host_key(f, host, "h"))
    return {_s(k): _s(v) for k, v in raw.items()}


def queue(f: RedisFrontier, host: str) -> list[str]:
    """The host's queued entries in lease order: its priority levels best first, each a FIFO."""
    sp = shard_tag(f.core.settings.prefix, f.shard_of(host))
    return [_s(e) for level in range(PRIORITY_LEVELS) for e in f.client.lrange(queue_key(sp, host, level), 0, -1)]


def server_ms(f: RedisFrontier) -> int:
    sec, usec = f.client.time()
    return int(sec) * 1000 + int(usec) // 1000


def elapse(f: RedisFrontier, host: str) -> None:
    """Let the host's next-allowed time pass (instead of sleeping): move it to the front of its ready set."""
    tag = shard_tag(f.core.settings.prefix, f.shard_of(host))
    levels = [level for level in range(PRIORITY_LEVELS) if f.client.zscore(ready_key(tag, level), host) is not None]
    assert len(levels) == 1  # an idle host with queued URLs waits in exactly one ready set
    f.client.zadd(ready_key(tag, levels[0]), {host: 0}, xx=True)


def actual(f: RedisFrontier) -> tuple[int, int]:
    """(URLs in queues, leases) counted from the data itself, to check the counters against."""
    queued = leases = 0
    for shard in range(f.shards):
        tag = shard_tag(f.core.settings.prefix, shard)
        pattern = tag.replace("{", "\\{").replace("}", "\\}") + "q*:*"  # q:<host> and q<level>:<host>
        for key in f.client.scan_iter(match=pattern, count=1000):
            queued += f.client.llen(key)
        leases += f.client.hlen(tag + "L")
    return queued, leases


def release(
    f: RedisFrontier, leases: Iterable[Lease], action: UrlAction = UrlAction.KEEP, delay_ms: int = 0, **kw: object
) -> None:
    f.release([Release(x.token, x.shard, x.host, action=action, delay_ms=delay_ms, **kw) for x in leases])  # type: ignore[arg-type]


def complete(f: RedisFrontier, leases: Iterable[Lease], **counters: int) -> int:
    """How many completions took effect (the others were discarded: STALE)."""
    return f.complete([Completion(x.token, x.shard, dict(counters)) for x in leases]).count(None)


def drain(f: RedisFrontier, owner: str = "drain/f0") -> list[Lease]:
    """Lease, release (KEEP) and complete until nothing is ready; returns every lease completed."""
    done: list[Lease] = []
    while batch := f.lease(owner, 100):
        release(f, batch)
        assert complete(f, batch) == len(batch)
        done += batch
    return done


def make_enhanced(f: RedisFrontier) -> None:
    """Rewrite a fresh crawl (nothing added yet) into one a version before the blocked filters created: a chain of
    whole-bitmap filters, hashing scheme 'e'. Open it again to use it."""
    s = f.core.settings
    chain = bloom_chain(s.expected_urls, s.bloom_error, f.core.shards)
    meta = meta_key(s.prefix)
    f.client.hdel(meta, "bloom_scheme")
    f.client.hset(
        meta, mapping={"bloom_chain": chain_spec(chain), "bloom_m": chain[0].bits, "bloom_k": chain[0].hashes}
    )
    f.client.delete(*(sp + "bloom" for sp in f.core._sp))
