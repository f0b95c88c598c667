"""Simhash of the main text and the shared near-duplicate index (a real Redis)."""

from __future__ import annotations

import dataclasses
import random
import uuid

import redis
from selectolax.lexbor import LexborHTMLParser

from tests.fixtures.memory_frontier import MemoryFrontier
from tests.parse.helpers import RecordingSink, make_ctx, make_page
from webtrawl.config import DiscoveryOptions
from webtrawl.parse.batch import PageBatches
from webtrawl.parse.simhash import MAX_DISTANCE, NearDuplicateIndex, bands, distance, page_text, simhash
from webtrawl.store import FanOut

WORDS = [f"w{i}" for i in range(500)]


def _text(seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(WORDS) for _ in range(n)]


def _bitwise_reference(text: str) -> int:
    """The textbook simhash: one vote per bit per shingle (what the bit-sliced counters must equal)."""
    import hashlib

    words = text.lower().split()
    votes = [0] * 64
    for i in range(len(words) - 2):
        h = int.from_bytes(hashlib.blake2b(" ".join(words[i : i + 3]).encode(), digest_size=8).digest(), "big")
        for bit in range(64):
            votes[bit] += 1 if (h >> bit) & 1 else -1
    return sum(1 << bit for bit in range(64) if votes[bit] > 0)


def test_simhash_equals_the_textbook_definition_and_moves_little_for_small_edits() -> None:
    for seed in range(5):
        words = _text(seed, 201)  # an odd number of shingles: no ties
        assert simhash(" ".join(words)) == _bitwise_reference(" ".join(words))
    base = _text(7)
    edited = list(base)
    edited[100] = "changed"
    assert distance(simhash(" ".join(base)) or 0, simhash(" ".join(edited)) or 0) <= MAX_DISTANCE
    assert distance(simhash(" ".join(base)) or 0, simhash(" ".join(_text(8))) or 0) > 10
    assert simhash("too short to judge") is None


def test_page_text_leaves_out_boilerplate() -> None:
    html = "<html><body><nav>menu</nav><header>top</header><p>body text</p><script>x()</script><footer>f</footer>"
    assert page_text(LexborHTMLParser(html)).split() == ["body", "text"]


def test_the_index_finds_earlier_copies_in_redis_and_in_the_same_batch(redis_client: redis.Redis) -> None:
    prefix = f"nd{uuid.uuid4().hex[:8]}"
    index = NearDuplicateIndex(redis_client, prefix, 8)
    a = simhash(" ".join(_text(1))) or 0
    near = a ^ 0b101  # 2 bits away
    far = a ^ ((1 << 64) - 1)
    assert index.find([("http://x.test/a", a), ("http://x.test/b", near), ("http://x.test/c", far)]) == [
        None,
        "http://x.test/a",  # an earlier page of the same batch
        None,
    ]
    index.add([("http://x.test/a", a)])
    assert index.find([("http://x.test/a", a)]) == [None]  # never itself (refetched after a crash)
    assert index.find([("http://x.test/d", near ^ (1 << 63))]) == ["http://x.test/a"]  # 3 bits, other bands
    assert len(bands(a)) == 4
    for key in redis_client.scan_iter(match=f"{prefix}:*"):
        redis_client.delete(key)


def test_a_recrawled_page_keeps_one_entry_in_the_index_and_a_gone_one_none(redis_client: redis.Redis) -> None:
    """A watched page whose text changes every round was filed once per version: the index grew for ever, and an
    old version's text still matched new pages. Each round's copy now replaces the last; a page gone leaves."""
    prefix = f"nd{uuid.uuid4().hex[:8]}"
    index = NearDuplicateIndex(redis_client, prefix, 8)
    frontier = MemoryFrontier(1_000, [])
    ctx = dataclasses.replace(make_ctx(), near_duplicates=True)
    output = FanOut([RecordingSink([])], streams={"records"})
    batches = PageBatches(DiscoveryOptions(recrawl_after=100.0, near_duplicates=True), ctx, frontier, output, index)
    url = "http://site.example/watched"

    def members() -> list[str]:
        keys = redis_client.keys(f"{prefix}:*")
        return sorted({m.decode()[16:] + m.decode()[:16] for key in keys for m in redis_client.smembers(key)})

    state = ""
    for version, status in ((1, 200), (2, 200), (2, 200), (2, 404)):  # the third: the same bytes, a revisit
        page = make_page(" ".join(_text(version)).encode() if status == 200 else b"gone", url=url, status=status)
        page.recrawl = state
        batches.process([page])
        state = frontier.completed[-1].recrawl
        expected = [url + f"{simhash(' '.join(_text(version))):016x}"] if status == 200 else []
        assert members() == expected, version
    for key in redis_client.scan_iter(match=f"{prefix}:*"):
        redis_client.delete(key)
