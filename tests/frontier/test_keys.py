"""URL splitting, the compact queue entry, Bloom sizing and the crawl's stored meta."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fixtures.redis_fixtures import FrontierFactory
from webtrawl.config import CrawlConfig
from webtrawl.errors import StateError
from webtrawl.frontier import FrontierSettings, RedisFrontier
from webtrawl.frontier.bloom import block_positions, blocked_chain, bloom_size, positions
from webtrawl.frontier.keys import decode_entry, encode_meta, meta_key, split_url
from webtrawl.messages import NewUrl


@pytest.mark.parametrize(
    ("url", "host", "origin", "rest"),
    [
        ("http://Example.COM/a?b", "example.com", "http://Example.COM", "/a?b"),
        ("https://u:p@h.test:8443/x", "h.test", "https://u:p@h.test:8443", "/x"),
        ("http://[2001:db8::1]:8080/", "2001:db8::1", "http://[2001:db8::1]:8080", "/"),
        ("http://h.test?q", "h.test", "http://h.test", "?q"),
    ],
)
def test_split_url(url: str, host: str, origin: str, rest: str) -> None:
    assert split_url(url) == (host, origin, rest)


@pytest.mark.parametrize("url", ["/x", "h.test/x", "mailto:a@b", "http:///x", ""])
def test_split_url_rejects_what_is_not_absolute(url: str) -> None:
    assert split_url(url) is None


@given(
    depth=st.integers(0, 10_000),
    hops=st.integers(0, 50),
    retries=st.integers(0, 50),
    priority=st.integers(-1, 3),
    rest=st.sampled_from(["/", "/a/b?c=1", "?x", "", "/9/8", "https://other.test:1/x", "/~3/x"]),
)
def test_entry_round_trip(depth: int, hops: int, retries: int, priority: int, rest: str) -> None:
    entry = decode_entry(encode_meta(depth, hops, retries, priority) + rest, "http://h.test")
    url = rest if rest.startswith("https:") else "http://h.test" + rest
    assert entry == (url, depth, hops, retries, priority, "")


def test_an_entry_costs_its_path_plus_one_byte() -> None:
    assert len(encode_meta(3) + "/path") == len("/path") + 1


def test_bloom_size_meets_the_error_rate() -> None:
    bits, hashes = bloom_size(10_000_000, 0.0001, 64)
    per_shard = 10_000_000 / 64
    assert hashes == 6  # fewer hashes than the optimum (13): cheaper adds for a 29% larger bitmap
    assert (1 - math.exp(-hashes * per_shard / bits)) ** hashes <= 0.0001
    assert bits * 64 / 8 < 30 * 1024 * 1024  # ~29.5 MiB for 10 M URLs
    assert len(set(positions("http://a.test/", bits, hashes))) == hashes


def test_settings_from_config_are_in_milliseconds() -> None:
    s = FrontierSettings.from_config(CrawlConfig().with_options(lease_ttl=1.5, shards=16))
    assert (s.lease_ttl_ms, s.process_ttl_ms, s.shards, s.backoff_base_ms, s.park_after) == (1500, 600_000, 16, 5000, 8)


def test_the_first_open_fixes_the_crawls_shards_and_bloom_size(frontier: FrontierFactory) -> None:
    f = frontier(shards=5, expected_urls=50_000)
    meta = f.meta()
    assert (meta["shards"], meta["bloom_scheme"], meta["canon_version"]) == (5, "b", 3)
    assert meta["bloom_k"] == blocked_chain(50_000, f.core.settings.bloom_error, 5)[0].hashes
    assert isinstance(meta["created"], int)
    again = frontier(prefix=f.core.settings.prefix, shards=64, expected_urls=10)
    assert again.meta() == meta
    assert again.counters().bloom_bits == 5 * int(meta["bloom_m"])


def test_the_bloom_filter_sets_exactly_the_documented_bits(frontier: FrontierFactory) -> None:
    f = frontier(shards=1)
    url = "http://a.test/some/page"
    f.add([NewUrl(url)])
    bitmap = f.client.get(f.core._sp[0] + "bloom") or b""
    assert isinstance(bitmap, bytes)
    on = {i * 8 + j for i, byte in enumerate(bitmap) for j in range(8) if byte & (0x80 >> j)}
    first, offsets = block_positions(url, f.core.bloom_m, f.core.bloom_k)  # a blocked filter: one 64-byte block
    assert on == {first * 8 + p for p in offsets}


@pytest.mark.parametrize(("error", "expected_urls"), [(1e-2, 1000), (1e-6, 1000), (1e-10, 1000), (1e-4, 10_000_000)])
def test_blocked_filters_set_the_documented_bits_for_every_hash_count(
    frontier: FrontierFactory, error: float, expected_urls: int
) -> None:
    """add.lua's test-and-set of a block agrees with bloom.block_positions for 6, 12 and 16 hashes (the offsets past
    the eighth are derived), and in a bitmap too big to be allocated up front, which grows block by block."""
    f = frontier(shards=1, bloom_error=error, expected_urls=expected_urls)
    urls = [f"http://h{i % 7}.test/p/{i}" for i in range(40)]
    assert f.add([NewUrl(u) for u in urls]).added == len(urls)
    bitmap = f.client.get(f.core._sp[0] + "bloom") or b""
    assert isinstance(bitmap, bytes)
    on = {i * 8 + j for i, byte in enumerate(bitmap) for j in range(8) if byte & (0x80 >> j)}
    want = set()
    for url in urls:
        first, offsets = block_positions(url, f.core.bloom_m, f.core.bloom_k)
        want |= {first * 8 + p for p in offsets}
    assert on == want
    again = frontier(prefix=f.core.settings.prefix, shards=1)
    assert again.add([NewUrl(u) for u in urls]).seen == len(urls)


def test_a_reader_does_not_create_a_crawl(frontier: FrontierFactory) -> None:
    f = frontier()
    settings = FrontierSettings(prefix=f.core.settings.prefix + "x")
    with pytest.raises(StateError, match="no crawl with key prefix"):
        RedisFrontier.open(f.client, settings, create=False)
    assert f.client.exists(meta_key(settings.prefix)) == 0
    assert RedisFrontier.open(f.client, f.core.settings, create=False).meta() == f.meta()
