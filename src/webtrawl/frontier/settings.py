"""The frontier's own settings: the slice of :class:`CrawlConfig` it needs, in the units the Lua scripts use (ms)."""

from __future__ import annotations

from dataclasses import dataclass

from webtrawl.config import BLOOM_ERROR, EXPECTED_URLS, SHARDS, CrawlConfig
from webtrawl.formats.canonical import CANON_VERSION  # stored in meta so a resumed crawl can tell


@dataclass(frozen=True, slots=True)
class FrontierSettings:
    prefix: str = "wt"
    shards: int = SHARDS  # only used when the crawl is created; the stored value wins afterwards
    expected_urls: int = EXPECTED_URLS  # sizes the first Bloom filter of each shard's chain at creation (it grows)
    bloom_error: float = BLOOM_ERROR
    host_queue_cap: int = 200_000
    host_budget: int = 100_000  # 0: no limit
    frontier_cap: int = 100_000_000  # 0: no limit
    lease_ttl_ms: int = 120_000
    process_ttl_ms: int = 600_000
    backoff_base_ms: int = 5_000
    backoff_max_ms: int = 3_600_000
    park_after: int = 8  # 0: never park
    host_gap_ms: int = 1_000  # politeness gap applied when a lease is taken back from a dead fetch
    backoff_jitter: float = 0.2  # back-off is multiplied by a random factor in [1 - j, 1 + j]
    canon_version: int = CANON_VERSION
    empty_poll_ms: int = 500  # how long lease() leaves a shard alone after it had nothing ready
    shards_per_lease: int = 8  # shards asked in one lease() round trip
    recent_urls: int = 100_000  # URLs per process known to be seen, answered without Redis (0: off)
    # what one queue and one politeness gap cover: host name, registered domain, or host name gated per address
    # (ip: fetchers take the address's gate, gate.lua); only used when the crawl is created, the stored one wins
    politeness_key: str = "host"
    replicas: int = 0  # --redis-replicas: the parsers' adds WAIT for this many replicas; -1: as many as Redis has

    def __post_init__(self) -> None:
        if not self.prefix or any(c in self.prefix for c in "{} "):
            raise ValueError(f"bad frontier key prefix {self.prefix!r}")
        if not 1 <= self.shards <= 16384:
            raise ValueError(f"shards must be between 1 and 16384, not {self.shards}")
        if self.politeness_key not in ("host", "domain", "ip"):
            raise ValueError(f"politeness_key must be host, domain or ip, not {self.politeness_key!r}")
        if not 0.0 <= self.backoff_jitter < 1.0:
            raise ValueError(f"backoff_jitter must be in [0, 1), not {self.backoff_jitter}")

    @classmethod
    def from_config(cls, cfg: CrawlConfig, **overrides: object) -> FrontierSettings:
        """Built where the whole config is at hand (the node, the admin commands); stages get the result."""
        pol, lim, front = cfg.politeness, cfg.limits, cfg.frontier
        values: dict[str, object] = {
            "shards": front.shards,
            "expected_urls": front.expected_urls,
            "bloom_error": front.bloom_error,
            "host_queue_cap": lim.host_queue_cap,
            "host_budget": lim.host_budget,
            "frontier_cap": lim.frontier_cap,
            "lease_ttl_ms": round(front.lease_ttl * 1000),
            "process_ttl_ms": round(front.process_ttl * 1000),
            "backoff_base_ms": round(pol.backoff_base * 1000),
            "backoff_max_ms": round(pol.backoff_max * 1000),
            "park_after": pol.park_after,
            "host_gap_ms": round(pol.delay * 1000),
            "politeness_key": front.politeness_key,
            "replicas": front.redis_replicas,
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]
