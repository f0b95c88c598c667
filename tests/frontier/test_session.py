"""Host sessions (``Release.hold``): the releasing owner gets the host's next URL at once, due at its next-allowed
time, so its open connection is reused; the host stays out of the ready set, and a dead holder loses nothing."""

from __future__ import annotations

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import actual, complete, host_state, new_urls, queue, server_ms
from webtrawl.frontier import Release, UrlAction


def _hold(lease_token: str, shard: int, host: str, delay_ms: int = 0, **kw: object) -> Release:
    return Release(lease_token, shard, host, action=UrlAction.KEEP, delay_ms=delay_ms, hold=True, **kw)  # type: ignore[arg-type]


def test_hold_hands_the_next_url_to_the_same_owner_after_the_gap(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2", "http://a.test/3", "http://b.test/1"))
    first = {x.host: x for x in f.lease("n/f0", 5)}
    a = first["a.test"]
    before = server_ms(f)
    (held,) = f.release([_hold(a.token, a.shard, a.host, delay_ms=5_000)])
    assert held is not None
    assert held.lease.url == "http://a.test/2" and held.lease.token.startswith("n/f0.")
    assert 5_000 <= held.wait_ms <= 5_002  # never less than the gap (two clock reads, rounded down and up)
    state = host_state(f, "a.test")
    assert state["l"] == held.lease.token and int(state["n"]) >= before + 5_000
    assert f.lease("n/f1", 5) == [], "a held host is nobody else's, and b.test is leased"
    c = f.counters()
    assert (c.queued, c.inflight, c.get("session-leases")) == (1, 3, 1)
    assert actual(f) == (1, 3)
    # the session goes on while the queue has URLs
    (again,) = f.release([_hold(held.lease.token, held.lease.shard, "a.test")])
    assert again is not None and again.lease.url == "http://a.test/3"
    assert f.release([_hold(again.lease.token, again.lease.shard, "a.test")]) == [None]  # queue empty
    assert "l" not in host_state(f, "a.test") and queue(f, "a.test") == []
    complete(f, [a, held.lease, again.lease])
    assert f.counters().inflight == 1  # b.test's lease
    assert actual(f) == (0, 1)


def test_without_hold_or_on_failure_the_host_goes_back_to_the_ready_set(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2", "http://c.test/1", "http://c.test/2"))
    leases = {x.host: x for x in f.lease("n/f0", 5)}
    a, c = leases["a.test"], leases["c.test"]
    replies = f.release(
        [
            Release(a.token, a.shard, a.host, action=UrlAction.KEEP, delay_ms=0),
            _hold(c.token, c.shard, c.host, failed=True),  # a failing host backs off: no session
        ]
    )
    assert replies == [None, None]
    assert [x.host for x in f.lease("n/f1", 5)] == ["a.test"]  # c.test backs off
    assert "l" not in host_state(f, "c.test")


def test_a_dead_holder_loses_nothing_and_the_gap_still_holds(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2"))
    (a,) = f.lease("n/f0", 1)
    (held,) = f.release([_hold(a.token, a.shard, a.host, delay_ms=60_000)])
    assert held is not None
    before = server_ms(f)
    assert f.reclaim_owner("n/f0") == 2  # the fetcher died: the page it fetched and the one it held
    assert queue(f, "a.test") == ["0/1", "0/2"]
    assert int(host_state(f, "a.test")["n"]) >= before + 59_000, "the host still waits its gap"
    assert f.lease("n/f1", 1) == []
