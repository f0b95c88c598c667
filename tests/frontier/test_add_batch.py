"""How an add call is built: host runs in one argument each, client-side Bloom hashes, many shards per call."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import drain, make_enhanced, new_urls, queue
from webtrawl.frontier import adding
from webtrawl.frontier.adding import AddBatch
from webtrawl.frontier.bloom import block_positions, positions
from webtrawl.frontier.keys import _split_any, split_parts, split_url
from webtrawl.frontier.recent import RecentUrls
from webtrawl.frontier.redis_frontier import RedisFrontier
from webtrawl.messages import NewUrl

_TRICKY = [
    "http://Example.COM/a?b",
    "HTTP://example.com/upper-scheme",
    "https://u:p@h.test:8443/x",
    "http://[2001:db8::1]:8080/",
    "http://h.test?q/with/slash",
    "http://h.test#frag/x",
    "https://h.test:99/p",
    "http:///x",
    "https://h.test",
    "ftp://h.test/f",
    "mailto:a@b.test",
]


@pytest.mark.parametrize("url", _TRICKY)
def test_the_fast_split_agrees_with_the_regex(url: str) -> None:
    assert split_parts(url) == _split_any(url)


@given(
    scheme=st.sampled_from(["http://", "https://", "HTTPS://", "h://"]),
    netloc=st.text(alphabet="ab.:@[]?#-1", max_size=12),
    rest=st.text(alphabet="/?#a\n=", max_size=12),
)
def test_the_fast_split_agrees_with_the_regex_on_any_text(scheme: str, netloc: str, rest: str) -> None:
    url = scheme + netloc + rest
    assert split_parts(url) == _split_any(url)


def _bits(f: RedisFrontier) -> set[int]:
    bitmap = f.client.get(f.core._sp[0] + "bloom") or b""
    assert isinstance(bitmap, bytes)
    return {i * 8 + j for i, byte in enumerate(bitmap) for j in range(8) if byte & (0x80 >> j)}


def _positions(f: RedisFrontier, url: str) -> list[int]:
    """The bits of ``url`` in the shard's first filter, by the crawl's scheme (bloom.py's mirror of add.lua)."""
    if f.core.bloom_chain[0].blocked:
        first, offsets = block_positions(url, f.core.bloom_m, f.core.bloom_k)
        return [first * 8 + p for p in offsets]
    return positions(url, f.core.bloom_m, f.core.bloom_k)


def _enhanced_crawl(frontier: FrontierFactory, shards: int) -> RedisFrontier:
    fresh = frontier(shards=shards)
    make_enhanced(fresh)
    old = frontier(prefix=fresh.core.settings.prefix, shards=shards)
    assert old.core._bloom_args[1] == "e" and not old.core.bloom_chain[0].blocked
    return old


@pytest.mark.parametrize("scheme", ["b", "e"])
def test_urls_with_a_raw_newline_go_one_by_one_and_hash_like_the_rest(frontier: FrontierFactory, scheme: str) -> None:
    f = frontier(shards=1) if scheme == "b" else _enhanced_crawl(frontier, 1)
    assert f.core._bloom_args[1] == scheme
    urls = ["http://a.test/1", "http://a.test/x\ny", "http://a.test/2", "http://a.test/z\n", "http://b.test/3"]
    assert f.add(new_urls(*urls)).added == 5
    expected = {bit for url in urls for bit in _positions(f, url)}
    assert _bits(f) == expected  # the script's own SHA-1 and the client's agree with bloom.py's positions
    drained = [x.url for x in drain(f)]
    assert sorted(drained) == sorted(urls)
    assert [u for u in drained if "a.test" in u] == urls[:4]
    assert f.add(new_urls(*urls)).seen == 5
    assert f.add(new_urls("http://c\n.test/4")).added == 1  # (a lease record cannot hold such a host)


def test_one_call_keeps_each_hosts_order_across_origins_depths_and_shards(frontier: FrontierFactory) -> None:
    f = frontier(shards=8)
    items = [
        NewUrl("http://a.test/1", depth=1),
        NewUrl("http://b.test/1", depth=1),
        NewUrl("https://a.test/2", depth=1),  # another origin of host a.test: a run of its own
        NewUrl("http://a.test/3", depth=2),  # another depth
        NewUrl("http://a.test/4", depth=2, hops=1),
        NewUrl("http://b.test/2", depth=1),
        NewUrl("http://a.test:81/5", depth=2),
    ]
    assert f.add(items).added == 7
    assert queue(f, "a.test") == ["1/1", "1https://a.test/2", "2/3", "2.1/4", "2http://a.test:81/5"]
    leased = {x.url: (x.depth, x.hops) for x in drain(f)}
    assert leased == {x.url: (x.depth, x.hops) for x in items}


def _frontier_state(f: RedisFrontier, hosts: list[str]) -> tuple[dict[str, list[str]], dict[str, int]]:
    c = f.counters()
    return {h: queue(f, h) for h in hosts}, {k: c.get(k) for k in ("added", "seen", "queued", "hosts")}


def test_a_call_per_shard_and_one_call_for_all_shards_store_the_same(frontier: FrontierFactory) -> None:
    hosts = [f"h{i}.test" for i in range(30)]
    batch = [NewUrl(f"http://{h}/p/{j}", depth=j) for j in range(4) for h in hosts]
    batch.insert(40, NewUrl("http://h1.test/p/0"))  # seen: h1.test's queue is not full yet
    per_shard = frontier(shards=16, host_queue_cap=3)
    per_shard.core.one_slot = True  # as on a cluster
    merged = frontier(shards=16, host_queue_cap=3)
    a, b = per_shard.add(batch), merged.add(batch)
    assert (a.added, a.seen, a.dropped) == (b.added, b.seen, b.dropped) == (90, 1, {"host-queue-cap": 30})
    assert sorted(a.refused) == sorted(b.refused) == sorted((f"http://{h}/p/3", "host-queue-cap") for h in hosts)
    assert _frontier_state(per_shard, hosts) == _frontier_state(merged, hosts)


def test_counters_of_a_merged_call_sum_up_and_the_crawl_finishes(frontier: FrontierFactory) -> None:
    f = frontier(shards=16)
    assert f.add(new_urls(*[f"http://h{i}.test/" for i in range(40)])).added == 40
    c = f.counters()
    assert (c.get("added"), c.queued, c.get("hosts")) == (40, 40, 40)
    assert not f.is_finished()
    assert len(drain(f)) == 40
    assert f.is_finished()
    assert f.counters().queued == 0


def test_a_large_batch_is_cut_into_calls_at_segment_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adding, "MAX_URLS_PER_CALL", 10)
    batch = AddBatch(lambda host: int(host[1:].split(".")[0]) % 8, RecentUrls(0), allowed=1000)
    batch.extend([NewUrl(f"http://h{i % 16}.test/{i}") for i in range(60)] + new_urls("not a url"))
    sizes = {seg.shard: seg.size for seg in batch.segments.values()}
    assert sizes == {0: 8, 1: 8, 2: 8, 3: 8, 4: 7, 5: 7, 6: 7, 7: 7}  # "not a url" is counted on shard 0
    calls = batch.calls(one_slot=False)
    assert [[seg.shard for seg in call] for call in calls] == [[0], [1], [2], [3], [4], [5], [6], [7]]
    monkeypatch.setattr(adding, "MAX_URLS_PER_CALL", 16)
    calls = batch.calls(one_slot=False)
    assert [[seg.shard for seg in call] for call in calls] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert len(batch.calls(one_slot=True)) == 8
    assert batch.result.refused == [("not a url", "bad-url")]


def test_the_runs_of_a_segment_are_one_argument_each() -> None:
    batch = AddBatch(lambda host: 0, RecentUrls(0), allowed=1000)
    batch.extend([NewUrl("http://a.test/1"), NewUrl("http://a.test/2"), NewUrl("http://b.test/x\ny")])
    args = batch.segments[0].args("sp:")
    assert args[:3] == ["sp:", 0, 2]
    run = args[3]
    assert isinstance(run, bytes)
    host, origin, meta, body = run.split(b"\n", 3)
    assert (host, origin, meta) == (b"a.test", b"http://a.test", b"0")
    first = body[: body.index(b"\n", 20)]  # 20 hash bytes may hold a newline: search after them, as add.lua does
    second = body[len(first) + 1 :]
    assert (first[20:], second[20:]) == (b"/1", b"/2")
    assert block_positions("http://a.test/1", 512 * 2**32, 8) == (
        int.from_bytes(first[:4], "big") * 64,
        [int.from_bytes(first[i : i + 2], "big") & 511 for i in range(4, 20, 2)],
    )
    bits = positions("http://a.test/1", 2**32, 2, enhanced=False)  # (the first two are the same in both schemes)
    assert bits == [
        int.from_bytes(first[:4], "big"),
        (int.from_bytes(first[:4], "big") + int.from_bytes(first[4:8], "big")) % 2**32,
    ]
    assert args[4:] == ["", "b.test", "http://b.test", "0", "/x\ny"]
    assert split_url("http://b.test/x\ny") == ("b.test", "http://b.test", "/x\ny")


def _unpacked(args: list[object]) -> list[tuple[str, str, bytes]]:
    """(origin, url, hash) of every URL of one segment's arguments, read as add.lua reads them."""
    out: list[tuple[str, str, bytes]] = []
    at = 3 + 2 * int(str(args[1]))
    while at < len(args):
        run = args[at]
        if run == "":  # an explicit run: host, origin, meta, rest
            origin, rest = str(args[at + 2]), str(args[at + 4])
            out.append((origin, origin + rest, b""))
            at += 5
            continue
        assert isinstance(run, bytes)
        _, origin_b, _, body = run.split(b"\n", 3)
        while body:
            end = body.find(b"\n", 20)
            line, body = (body, b"") if end < 0 else (body[:end], body[end + 1 :])
            out.append((origin_b.decode(), (origin_b + line[20:]).decode(), line[:20]))
        at += 1
    return out


_PATHS = st.sampled_from(["/", "/a", "/é?q=ü", "/x?y=1&z", "/%41", "/a/b/", "/\u20ac"])
_ORIGINS = st.sampled_from(
    ["http://a.test", "https://a.test:8443", "https://u:p@b.test", "http://[2001:db8::1]:8080", "http://bü.test"]
)


@given(st.lists(st.tuples(_ORIGINS, _PATHS, st.integers(0, 2)), max_size=30))
def test_each_packed_url_is_its_origin_and_rest_with_its_own_sha1(items: list[tuple[str, str, int]]) -> None:
    urls = [NewUrl(origin + path, depth) for origin, path, depth in items]
    batch = AddBatch(lambda host: 0, RecentUrls(0), allowed=1000)
    batch.extend(urls)
    got = _unpacked(batch.segments[0].args("sp:")) if urls else []
    assert sorted(url for _, url, _ in got) == sorted(new.url for new in urls)
    for origin, url, digest in got:
        assert split_parts(url) is not None and split_parts(url)[1] == origin  # type: ignore[index]
        assert digest == hashlib.sha1(url.encode()).digest()


def test_recent_urls_remember_a_whole_call_and_evict_the_oldest() -> None:
    recent = RecentUrls(3)
    recent.remember_all(["u1", "u2", "u1", "u3", "u4"])
    assert len(recent) == 3
    assert "u1" not in recent and all(u in recent for u in ("u2", "u3", "u4"))
    off = RecentUrls(0)
    off.remember_all(["u1"])
    assert "u1" not in off
