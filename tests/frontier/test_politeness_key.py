"""--politeness-key: one queue per registered domain, and address gates shared by all names on one address."""

from __future__ import annotations

import time

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import new_urls, release


def test_domain_key_puts_all_hosts_of_a_domain_in_one_queue_with_one_lease_at_a_time(
    frontier: FrontierFactory,
) -> None:
    f = frontier(politeness_key="domain")
    f.add(new_urls("http://a.example.co.uk/1", "https://b.example.co.uk/2", "http://other.test/3"))
    first = f.lease("n/f0", 10)
    assert sorted(x.host for x in first) == ["example.co.uk", "other.test"]
    assert {x.url for x in first} == {"http://a.example.co.uk/1", "http://other.test/3"}
    assert f.lease("n/f1", 10) == []  # b.example.co.uk waits for its domain's lease
    release(f, [x for x in first if x.host == "example.co.uk"])
    (second,) = f.lease("n/f1", 10)
    assert (second.host, second.url) == ("example.co.uk", "https://b.example.co.uk/2")


def test_the_key_is_fixed_when_the_crawl_is_created(frontier: FrontierFactory) -> None:
    f = frontier(politeness_key="domain")
    prefix = f.core.settings.prefix
    again = frontier(prefix=prefix, politeness_key="host")
    assert again.politeness_key == "domain"
    again.add(new_urls("http://c.example.co.uk/1"))
    assert [x.host for x in again.lease("n/f0", 10)] == ["example.co.uk"]


def test_an_address_gate_admits_one_request_then_waits_its_gap(frontier: FrontierFactory) -> None:
    f = frontier(politeness_key="ip")
    assert f.take_address("127.0.0.9", "t1", 60_000) == 0
    busy = f.take_address("127.0.0.9", "t2", 60_000)
    assert 1 <= busy <= 100  # in flight: ask again after about a gap, not after the dead-holder lapse
    assert f.take_address("127.0.0.8", "t2", 60_000) == 0  # another address is independent
    f.free_address("127.0.0.9", "t2", 5_000)  # not the holder: no effect
    assert f.take_address("127.0.0.9", "t3", 60_000) > 0
    f.free_address("127.0.0.9", "t1", 5_000)
    wait = f.take_address("127.0.0.9", "t3", 60_000)
    assert 4_000 < wait <= 5_001  # the gap runs from the end of t1's request
    f.free_address("127.0.0.9", "t3", 0)  # t3 never held it: the gap still runs
    assert f.take_address("127.0.0.9", "t3", 60_000) > 0


def test_a_dead_holders_gate_lapses(frontier: FrontierFactory) -> None:
    f = frontier(politeness_key="ip")
    assert f.take_address("127.0.0.7", "dead", 30) == 0
    deadline = time.monotonic() + 5
    while f.take_address("127.0.0.7", "next", 60_000) != 0:
        assert time.monotonic() < deadline, "the lock of a dead holder never lapsed"
        time.sleep(0.01)
