"""The seen filter starts small and grows (a chain of bitmaps per shard), keeping its stated false-positive rate;
a crawl from before the chains keeps its one bitmap (issue 19: a 100-page crawl left a 30 MB append-only file)."""

from __future__ import annotations

import math

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import make_enhanced
from webtrawl.config import load
from webtrawl.frontier import FrontierSettings, RedisFrontier
from webtrawl.frontier.bloom import (
    BLOCK_BITS,
    TIGHTENING,
    block_positions,
    blocked_chain,
    blocked_false_positive_rate,
    bloom_size,
)
from webtrawl.frontier.keys import meta_key, shard_tag
from webtrawl.messages import NewUrl
from webtrawl.metrics.report import expected_false_positives


def _urls(start: int, count: int, tag: str) -> list[NewUrl]:
    return [NewUrl(f"http://h{i % 997}.test/{tag}/{i}", depth=1) for i in range(start, start + count)]


def _add_all(f: RedisFrontier, start: int, count: int, tag: str) -> tuple[int, int]:
    """(added, seen) of ``count`` distinct URLs, added in batches as parsers do."""
    added = seen = 0
    for first in range(start, start + count, 5000):
        result = f.add(_urls(first, min(5000, start + count - first), tag))
        added, seen = added + result.added, seen + result.seen
    return added, seen


def _bloom_bytes(f: RedisFrontier) -> int:
    """Bytes of every bitmap of the crawl's seen filter, as Redis holds them."""
    pattern = f"{f.core.settings.prefix}:*bloom*".replace("{", "\\{")
    return sum(int(f.client.strlen(key)) for key in f.client.scan_iter(match=pattern, count=1000))


def test_a_small_crawl_keeps_small_bitmaps(frontier: FrontierFactory) -> None:
    """The crawl's default settings: 100 URLs must not allocate a filter sized for ten million (or a billion)."""
    defaults = FrontierSettings.from_config(load({}, env={}))
    f = frontier(shards=defaults.shards, expected_urls=defaults.expected_urls, bloom_error=defaults.bloom_error)
    assert f.add(_urls(0, 100, "p")).added == 100
    assert _bloom_bytes(f) <= 4 * 1024 * 1024  # 64 shards x ~51 KiB, a million URLs' worth (ten million: 64 x 500 KiB)


def test_the_filter_grows_and_keeps_its_false_positive_rate(frontier: FrontierFactory) -> None:
    """200k URLs through the real script into a filter started for 1000: it grows to hold them all (none lost,
    none seen twice), and fresh URLs are wrongly called seen no more often than --bloom-error says."""
    error = 1e-3
    f = frontier(shards=4, expected_urls=1000, bloom_error=error, host_queue_cap=10**9, host_budget=0)
    bound = 4 * math.sqrt(200_000 * error)  # 4 standard deviations of Binomial(200k, error) of slack
    added, seen = _add_all(f, 0, 200_000, "a")
    assert added + seen == 200_000 and seen <= 200_000 * error + bound
    counters = f.counters()
    expected = expected_false_positives(counters)  # what trawl status says the filter has wrongly called seen
    assert abs(seen - expected) <= 5 * math.sqrt(expected), (seen, expected)
    assert min(newest for newest, _ in counters.bloom_fill) >= 3  # 250 -> 1000 -> 4000 -> 16000 -> ... per shard
    assert _add_all(f, 0, 200_000, "a")[0] == 0  # every URL is seen again, whichever filter holds it
    predicted = counters.bloom_false_positive_rate()
    assert 0 < predicted < error
    fresh = 200_000
    added, seen = _add_all(f, 10**6, fresh, "b")
    assert added + seen == fresh
    assert seen <= fresh * error + bound, seen  # false positives ~ Binomial(fresh, rate <= error)
    assert (
        _bloom_bytes(f)
        == sum(  # bitmaps allocated at their exact size, and only those in use
            sum(level[0] for level in counters.bloom_chain[: newest + 1]) // 8 for newest, _ in f.counters().bloom_fill
        )
    )


def test_a_crawl_from_before_the_chains_keeps_its_one_bitmap(frontier: FrontierFactory) -> None:
    f = frontier(expected_urls=1000)
    # the meta an older version wrote: one bitmap of bloom_size's bits and hashes, plain double hashing
    bits, hashes = bloom_size(1000, f.core.settings.bloom_error, f.shards)
    f.client.hdel(meta_key(f.core.settings.prefix), "bloom_chain", "bloom_scheme")
    f.client.hset(meta_key(f.core.settings.prefix), mapping={"bloom_m": bits, "bloom_k": hashes})
    old = frontier(prefix=f.core.settings.prefix, expected_urls=1000)
    assert len(old.core.bloom_chain) == 1
    assert _add_all(old, 0, 20_000, "a")[0] > 19_000  # a full bitmap makes false positives, but it works
    assert _add_all(old, 0, 100, "a") == (0, 100)
    sp = shard_tag(f.core.settings.prefix, 0)
    assert not f.client.exists(sp + "bloom1") and not f.client.exists(sp + "bn")  # it never grew
    assert old.counters().bloom_bits == f.shards * old.core.bloom_m


def test_a_crawl_of_whole_bitmap_filters_keeps_its_scheme_and_grows(frontier: FrontierFactory) -> None:
    """A crawl created before the blocked filters (scheme 'e') resumes with its own chain: what it had is seen,
    its chain grows, fresh URLs get in."""
    error = 1e-3
    settings = {"shards": 4, "expected_urls": 1000, "bloom_error": error, "host_queue_cap": 10**9, "host_budget": 0}
    fresh = frontier(**settings)
    make_enhanced(fresh)
    old = frontier(prefix=fresh.core.settings.prefix, **settings)
    assert old.core._bloom_args[1] == "e" and not any(level.blocked for level in old.core.bloom_chain)
    bound = 4 * math.sqrt(20_000 * error)
    added, seen = _add_all(old, 0, 20_000, "a")
    assert added + seen == 20_000 and seen <= 20_000 * error + bound
    again = frontier(prefix=fresh.core.settings.prefix, **settings)  # another process of the crawl, a restart
    assert again.core._bloom_args == old.core._bloom_args
    assert _add_all(again, 0, 20_000, "a")[0] == 0
    assert min(newest for newest, _ in again.counters().bloom_fill) >= 2  # 250 -> 1000 -> 4000 -> ...
    added, seen = _add_all(again, 10**6, 20_000, "b")
    assert added + seen == 20_000 and seen <= 20_000 * error + bound


def test_a_blocked_filter_at_capacity_keeps_its_false_positive_rate() -> None:
    """bloom.py's mirror of add.lua's blocked filter (tests/frontier/test_add_batch.py checks that they agree),
    filled to its capacity: 1M fresh URLs meet the rate the filter was sized for, and the rate bloom.py predicts."""
    error = 2e-3
    level = blocked_chain(100_000, error, 1)[0]
    target = error * (1 - TIGHTENING)
    bitmap = bytearray(level.bits // 8)
    for i in range(level.capacity):
        first, offsets = block_positions(f"http://h{i % 997}.test/a/{i}", level.bits, level.hashes)
        for p in offsets:
            bitmap[first + (p >> 3)] |= 0x80 >> (p & 7)
    probes, hits = 1_000_000, 0
    for i in range(probes):
        first, offsets = block_positions(f"http://h{i % 997}.test/b/{i}", level.bits, level.hashes)
        hits += all(bitmap[first + (p >> 3)] & (0x80 >> (p & 7)) for p in offsets)
    predicted = blocked_false_positive_rate(level.capacity * BLOCK_BITS / level.bits, level.hashes)
    assert predicted <= target
    sd = math.sqrt(probes * predicted)
    assert abs(hits - probes * predicted) <= 4 * sd, (hits, probes * predicted)
    assert hits <= probes * target + 4 * sd
