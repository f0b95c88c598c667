"""Sizing of the seen-URL Bloom filter, and a Python mirror of the bit positions the Lua scripts use.

The filter is one bitmap per shard (``SP bloom``), so a shard's script can test and set it without leaving its slot.
Positions come from ``redis.sha1hex(url)`` by double hashing: ``(h1 + i * h2) mod m`` for ``i < k`` with h1, h2 the
first two 32-bit words of the digest. That needs no Redis module and stays exact in Lua's double-precision numbers.
"""

from __future__ import annotations

import hashlib
import math

MAX_BITS_PER_SHARD = 2**32  # largest Redis string bitmap (512 MiB)
MAX_HASHES = 30
# Each hash is one bit set in add.lua's BITFIELD, the largest cost of an add in Redis. Six hashes and a 29% larger
# bitmap reach the same error rate as the optimum (13 at 1e-4): 3.1 instead of 2.4 bytes per URL, and Redis spends
# ~12 instead of ~18 us per added URL (trawl bench / benchmarks/bench_frontier.py).
FAST_HASHES = 6


def bloom_size(expected_urls: int, error: float, shards: int) -> tuple[int, int]:
    """Bits per shard ``m`` and hash count ``k`` for ``expected_urls`` over ``shards`` at false-positive ``error``.

    ``k = -log2 p`` (rounded, the memory optimum) but at most :data:`FAST_HASHES`, then the ``m`` at which that
    whole ``k`` reaches ``p`` for n URLs per shard: ``(1 - e^(-k n / m))^k = p``.
    """
    if not 0.0 < error < 1.0:
        raise ValueError(f"bloom error must be between 0 and 1, not {error}")
    per_shard = max(1, math.ceil(max(1, expected_urls) / max(1, shards)))
    hashes = max(1, min(MAX_HASHES, FAST_HASHES, round(-math.log2(error))))
    bits = math.ceil(-hashes * per_shard / math.log(1.0 - error ** (1.0 / hashes)))
    bits = min(MAX_BITS_PER_SHARD, max(1024, (bits + 7) // 8 * 8))
    return bits, hashes


def positions(url: str, bits: int, hashes: int) -> list[int]:
    """The bit offsets of ``url`` in its shard's bitmap (what add.lua computes)."""
    digest = hashlib.sha1(url.encode()).hexdigest()
    h1 = int(digest[0:8], 16)
    h2 = int(digest[8:16], 16) or 1
    return [(h1 + i * h2) % bits for i in range(hashes)]
