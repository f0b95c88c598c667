"""The seen-URL filter: per shard a chain of Bloom filters that starts small and grows (a scalable Bloom filter,
Almeida et al. 2007), its sizing, its false-positive arithmetic, and a Python mirror of the bit positions.

A shard's first bitmap (``SP bloom``) holds ``--expected-urls / shards`` URLs; when it has taken that many, add.lua
starts the next one (``SP bloom1``, ``SP bloom2``...), :data:`GROWTH` times larger, at a false-positive rate
:data:`TIGHTENING` times lower, so the chain's compound rate stays under ``--bloom-error`` however far it grows:
filter i gets ``error * (1 - r) * r^i`` and those sum to ``error``. A URL is seen if any filter of the chain has all
its bits; a new URL's bits go to the newest. A 100-page crawl so keeps 3 MiB of bitmaps (the default, a million
URLs) instead of one sized for a billion up front; a new URL costs one block read per filter of the chain. The
chain (bits, hashes and capacity of each filter) is fixed when the crawl is created (meta ``bloom_chain``); a crawl
from before it has one bitmap (``bloom_m``, ``bloom_k``) and keeps it.

Positions come from ``redis.sha1hex(url)``, h1 and h2 the first two 32-bit words of the digest (what the client
sends), by enhanced double hashing (Dillinger & Manolios 2004): ``x = h1 mod m, y = h2 mod m``, then for each hash
``x``, ``x = x + y``, ``y = y + i + 1`` (mod m). Plain double hashing, ``(h1 + i * h2) mod m``, which a crawl from
before the chains keeps, made ~30% more false positives than its rate in a simulation of the chain's small first
filters (the enhanced one matched random positions). Both need no Redis module and stay exact in Lua's doubles.

A crawl created since (meta ``bloom_scheme`` ``b``) has blocked filters (Putze et al. 2007): all bits of a URL in one
:data:`BLOCK_BITS`-bit block (:func:`block_positions`), so add.lua reads a URL's bits with one GETRANGE of 64 bytes
(one cache line) and writes them with one SETRANGE, instead of a GETBIT per bit (in a bitmap of many MiB: each a
cache miss) and a BITFIELD. Blocks fill unevenly, which costs bits at a given rate; more hashes, which cost Redis
almost nothing here, win them back (:func:`blocked_chain` sizes each filter with its blocks' Poisson load).
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections.abc import Sequence
from typing import NamedTuple

MAX_BITS_PER_SHARD = 2**32  # largest Redis string bitmap (512 MiB)
MAX_HASHES = 30
# Each hash is one bit set in add.lua's BITFIELD, the largest cost of an add in Redis. Six hashes and a 29% larger
# bitmap reach the same error rate as the optimum (13 at 1e-4): 3.1 instead of 2.4 bytes per URL, and Redis spends
# ~12 instead of ~18 us per added URL (trawl bench / benchmarks/bench_frontier.py). Each later filter of a chain may
# use one more (tighter rates cost fewer bits per URL with more hashes).
FAST_HASHES = 6
GROWTH = 4  # each filter of a chain holds this many times more URLs than the one before (few filters to test)
TIGHTENING = 0.5  # ... at this times the false-positive rate
MAX_FILTERS = 16  # the last one never counts as full
BLOCK_BITS = 512  # a blocked filter's block: one 64-byte GETRANGE, one cache line
MAX_BLOCKED_HASHES = 16  # 8 positions from the digest's 16-bit words, 8 more derived from them (block_positions)


class BloomLevel(NamedTuple):
    """One filter of a shard's chain: its bits, its hashes, and the URLs it takes before the next one starts (0:
    never full, the last of the chain and the single filter of an older crawl); ``blocked``: all hashes of a URL in
    one block of :data:`BLOCK_BITS` (the crawl's scheme 'b', not part of :func:`chain_spec`)."""

    bits: int
    hashes: int
    capacity: int
    blocked: int = 0


def grown_note(filters: int) -> str:
    """What a seen filter grown past ``--expected-urls`` costs, for the node's log line and ``trawl seed``'s."""
    return (
        f"the seen filter grew past --expected-urls: {filters} filters per shard now, each new URL is tested against "
        "each (one Redis read per filter); a crawl this size is cheaper created with a larger --expected-urls (each"
        " shard's first filter holds --expected-urls / --shards URLs and a host's URLs all go to one shard, so a crawl"
        " of few hosts grows it long before --expected-urls in all: give it fewer --shards too)"
    )


def bloom_size(expected_urls: int, error: float, shards: int, max_hashes: int = FAST_HASHES) -> tuple[int, int]:
    """Bits per shard ``m`` and hash count ``k`` for ``expected_urls`` over ``shards`` at false-positive ``error``.

    ``k = -log2 p`` (rounded, the memory optimum) but at most ``max_hashes``, then the ``m`` at which that whole
    ``k`` reaches ``p`` for n URLs per shard: ``(1 - e^(-k n / m))^k = p``.
    """
    if not 0.0 < error < 1.0:
        raise ValueError(f"bloom error must be between 0 and 1, not {error}")
    per_shard = max(1, math.ceil(max(1, expected_urls) / max(1, shards)))
    hashes = max(1, min(MAX_HASHES, max_hashes, round(-math.log2(error))))
    bits = math.ceil(-hashes * per_shard / math.log(1.0 - error ** (1.0 / hashes)))
    bits = min(MAX_BITS_PER_SHARD, max(1024, (bits + 7) // 8 * 8))
    return bits, hashes


def bloom_chain(expected_urls: int, error: float, shards: int) -> list[BloomLevel]:
    """The filters of one shard's chain, first (``expected_urls / shards`` URLs) to last."""
    per_shard = max(1, math.ceil(max(1, expected_urls) / max(1, shards)))
    chain = []
    for i in range(MAX_FILTERS):
        capacity = per_shard * GROWTH**i
        bits, hashes = bloom_size(capacity, error * (1 - TIGHTENING) * TIGHTENING**i, 1, FAST_HASHES + i)
        last = i == MAX_FILTERS - 1 or bits >= MAX_BITS_PER_SHARD
        chain.append(BloomLevel(bits, hashes, 0 if last else capacity))
        if last:
            break
    return chain


def blocked_false_positive_rate(per_block: float, hashes: int) -> float:
    """The false-positive rate of a blocked filter whose blocks hold ``per_block`` URLs on average: a block's load
    is Poisson (Putze et al. 2007), each block a small Bloom filter of :data:`BLOCK_BITS` bits."""
    if per_block <= 0:
        return 0.0
    sd = math.sqrt(per_block)
    lo, hi = max(0, int(per_block - 10 * sd)), int(per_block + 12 * sd + 12)
    pmf = math.exp(lo * math.log(per_block) - per_block - math.lgamma(lo + 1))  # Poisson(lo), then each next one
    step = (1.0 - 1.0 / BLOCK_BITS) ** hashes
    clear = step**lo  # a bit's chance to be clear after the block's URLs
    total = 0.0
    for i in range(lo, hi + 1):
        total += pmf * (1.0 - clear) ** hashes
        pmf *= per_block / (i + 1)
        clear *= step
    return total


@functools.lru_cache(maxsize=64)
def _blocked_shape(error: float) -> tuple[int, float]:
    """The hash count that needs the fewest bits for ``error`` and the URLs per block it then allows."""
    best = (1, 1e-9)
    for hashes in range(2, MAX_BLOCKED_HASHES + 1):
        lo, hi = math.log(1e-9), math.log(BLOCK_BITS)  # bisection on the log of the mean load of a block
        for _ in range(30):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if blocked_false_positive_rate(math.exp(mid), hashes) <= error else (lo, mid)
        if math.exp(lo) <= best[1] * 1.03:  # a hash more costs Redis CPU: it must save 3% of the bits
            break
        best = (hashes, math.exp(lo))
    return best


def blocked_chain(expected_urls: int, error: float, shards: int) -> list[BloomLevel]:
    """:func:`bloom_chain` of blocked filters (the scheme of new crawls): each filter's hashes are the count that
    needs the fewest bits at its rate (more hashes cost Redis nothing: one block is read and written whole)."""
    if not 0.0 < error < 1.0:
        raise ValueError(f"bloom error must be between 0 and 1, not {error}")
    per_shard = max(1, math.ceil(max(1, expected_urls) / max(1, shards)))
    chain = []
    for i in range(MAX_FILTERS):
        capacity = per_shard * GROWTH**i
        hashes, per_block = _blocked_shape(error * (1 - TIGHTENING) * TIGHTENING**i)
        bits = min(MAX_BITS_PER_SHARD, max(2, math.ceil(capacity / per_block)) * BLOCK_BITS)
        last = i == MAX_FILTERS - 1 or bits >= MAX_BITS_PER_SHARD
        chain.append(BloomLevel(bits, hashes, 0 if last else capacity, 1))
        if last:
            break
    return chain


def chain_spec(chain: Sequence[BloomLevel]) -> str:
    """``m,k,capacity;...``: the chain as add.lua reads it (and as the crawl's meta keeps it)."""
    return ";".join(f"{level.bits},{level.hashes},{level.capacity}" for level in chain)


def parse_chain(spec: str) -> list[BloomLevel]:
    return [BloomLevel(*(int(x) for x in part.split(","))) for part in spec.split(";") if part]


def _fp(level: BloomLevel, n: float) -> float:
    if level.blocked:
        return blocked_false_positive_rate(n * BLOCK_BITS / level.bits, level.hashes)
    return float((1.0 - math.exp(-level.hashes * n / level.bits)) ** level.hashes)


def chain_false_positive_rate(chain: Sequence[BloomLevel], newest: int, filled: int) -> float:
    """The chance that a URL never added is called seen by a shard whose newest filter is ``newest`` (0-based)
    holding ``filled`` URLs, the older ones full."""
    miss = 1.0
    for i in range(min(newest, len(chain) - 1) + 1):
        level = chain[i]
        miss *= 1.0 - _fp(level, filled if i == newest else level.capacity)
    return 1.0 - miss


def chain_expected_false_positives(chain: Sequence[BloomLevel], newest: int, filled: int) -> float:
    """False positives one shard's chain is expected to have made so far: each URL offered met the rate of the
    chain as it was then; integrated per filter over its fill (Simpson's rule)."""
    total, older_miss = 0.0, 1.0
    for i in range(min(newest, len(chain) - 1) + 1):
        level = chain[i]
        n = filled if i == newest else level.capacity
        if n > 0:
            steps = 32
            h = n / steps
            area = 0.0
            for j in range(steps + 1):
                weight = 1 if j in (0, steps) else (4 if j % 2 else 2)
                area += weight * (1.0 - older_miss * (1.0 - _fp(level, j * h)))
            total += area * h / 3
        older_miss *= 1.0 - _fp(level, n)
    return total


def positions(url: str, bits: int, hashes: int, enhanced: bool = True) -> list[int]:
    """The bit offsets of ``url`` in one bitmap of its shard (what add.lua computes); ``enhanced=False``: the plain
    double hashing of a crawl from before the chains."""
    digest = hashlib.sha1(url.encode()).hexdigest()
    h1 = int(digest[0:8], 16)
    h2 = int(digest[8:16], 16) or 1
    if not enhanced:
        return [(h1 + i * h2) % bits for i in range(hashes)]
    x, y, out = h1 % bits, h2 % bits, []
    for i in range(hashes):
        out.append(x)
        x, y = (x + y) % bits, (y + i + 1) % bits
    return out


def block_positions(url: str, bits: int, hashes: int) -> tuple[int, list[int]]:
    """A blocked filter's (first byte of the URL's block, bit offsets in the block) for ``url``: the block is the
    digest's first 32-bit word mod the blocks, the offsets the low 9 bits of its next eight 16-bit words (f1..f8),
    then, for more hashes, f_j + an odd step from the high bits of f_j+1 (what add.lua computes)."""
    digest = hashlib.sha1(url.encode()).digest()
    block = int.from_bytes(digest[:4], "big") % (bits // BLOCK_BITS)
    words = [int.from_bytes(digest[i : i + 2], "big") for i in range(4, 20, 2)]
    out = [w & 511 for w in words[:hashes]]
    for j in range(8, hashes):
        out.append((words[j - 8] + 2 * (words[(j - 7) % 8] >> 9) + 1) & 511)
    return block * BLOCK_BITS // 8, out
