"""A spider's route (callback + data) travels with its URL through the frontier: in the queue entry, the lease, a
retry, a reclaim, a host session and the recrawl set; URLs without one are stored byte for byte as before."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import drain, elapse, queue, release
from webtrawl.formats.recrawl import RecrawlState, decode
from webtrawl.frontier import Release, UrlAction
from webtrawl.frontier.keys import decode_entry, encode_meta, split_url
from webtrawl.messages import Completion, NewUrl

ROUTE = 'parse_product{"category":"Ünïcode ^3:x {}","n":[1,2]}'


@given(
    depth=st.integers(0, 1000),
    hops=st.integers(0, 5),
    retries=st.integers(0, 5),
    priority=st.integers(-1, 3),
    route=st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\n"), max_size=40),
    rest=st.sampled_from(["/", "/a/b?c=1", "?x", "", "/9/8", "https://other.test:1/x", "/^3:/x"]),
)
def test_entry_round_trip_with_a_route(
    depth: int, hops: int, retries: int, priority: int, route: str, rest: str
) -> None:
    entry = decode_entry(encode_meta(depth, hops, retries, priority, route) + rest, "http://h.test")
    url = rest if rest.startswith("https:") else "http://h.test" + rest
    assert entry == (url, depth, hops, retries, priority, route)


def test_entries_without_a_route_are_unchanged(frontier: FrontierFactory) -> None:
    assert encode_meta(3, 1, 2, 0, "") == encode_meta(3, 1, 2, 0) == "3.1.2~0"
    f = frontier(shards=1)
    f.add([NewUrl("http://a.test/plain", 1), NewUrl("http://a.test/routed", 1, route="detail")])
    assert queue(f, "a.test") == ["1/plain", "1^6:detail/routed"]


def test_the_route_survives_lease_retry_head_reclaim_and_a_session(frontier: FrontierFactory) -> None:
    f = frontier(shards=1, lease_ttl_ms=0)
    f.add([NewUrl("http://a.test/p1", 1, route=ROUTE), NewUrl("http://a.test/p2", 1, 0, 3, route="other")])
    (x,) = f.lease("n/f0", 1)
    assert (x.url, x.retries, x.route) == ("http://a.test/p1", 0, ROUTE)
    release(f, [x], UrlAction.RETRY)  # a transient failure: to the tail of its level, retries + 1
    (x,) = f.lease("n/f0", 1)
    assert (x.url, x.retries, x.route) == ("http://a.test/p1", 1, ROUTE)
    release(f, [x], UrlAction.HEAD)  # e.g. robots.txt had to come first
    elapse(f, "a.test")
    (x,) = f.lease("n/f0", 1)
    assert f.reclaim_expired() == 1  # its fetcher died: back to the head
    elapse(f, "a.test")
    (x,) = f.lease("n/f1", 1)
    assert (x.url, x.retries, x.route) == ("http://a.test/p1", 1, ROUTE)
    assert f.reclaim_owner("n/f1") == 1
    elapse(f, "a.test")
    (x,) = f.lease("n/f2", 1)
    assert (x.url, x.retries, x.route) == ("http://a.test/p1", 1, ROUTE)
    (held,) = f.release([Release(x.token, x.shard, x.host, hold=True)])  # a host session takes the next URL
    assert held is not None
    assert (held.lease.url, held.lease.route) == ("http://a.test/p2", "other")


def test_a_url_seen_before_keeps_the_route_of_its_first_discovery(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add([NewUrl("http://a.test/x", 1, route="first")])
    assert f.add([NewUrl("http://a.test/x", 1, route="second")]).seen == 1
    assert [(x.url, x.route) for x in drain(f)] == [("http://a.test/x", "first")]


def test_a_recrawled_url_keeps_its_route(frontier: FrontierFactory) -> None:
    f = frontier(shards=1)
    f.add([NewUrl("http://a.test/x", 2, route=ROUTE)])
    (x,) = f.lease("n/f0", 1)
    release(f, [x])
    parts = split_url(x.url)
    assert parts is not None
    state = RecrawlState(x.host, x.depth, parts.origin, parts.rest, 1000, route=x.route).encode()
    assert decode(state) == RecrawlState(x.host, 2, parts.origin, parts.rest, 1000, route=ROUTE)
    f.complete([Completion(x.token, x.shard, {}, x.url, state, 1)])  # due at once
    assert f.requeue_due() == 1
    assert [(y.url, y.depth, y.route) for y in drain(f)] == [("http://a.test/x", 2, ROUTE)]
