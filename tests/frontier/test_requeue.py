"""``trawl requeue``'s frontier side: a URL whose retries ran out keeps its queue entry (complete.lua, SP err) until
it is queued again, past the seen filter, with fresh retries and what it was queued with (depth, a spider's route)."""

from __future__ import annotations

from collections import Counter

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import actual, drain, release
from webtrawl.formats.recrawl import RecrawlState
from webtrawl.frontier import RedisFrontier
from webtrawl.frontier.keys import split_url
from webtrawl.messages import Completion, Lease, NewUrl


def _failed(f: RedisFrontier, lease: Lease, reason: str) -> None:
    assert f.complete([Completion(lease.token, lease.shard, {"err:" + reason: 1}, failed=reason)]) == [None]


def _leased(f: RedisFrontier) -> dict[str, Lease]:
    leases = f.lease("n/f0", 10)
    release(f, leases)
    return {x.url: x for x in leases}


def test_urls_whose_retries_ran_out_are_kept_and_queued_again_by_reason(frontier: FrontierFactory) -> None:
    f = frontier()
    route = '1:parse_item:{"sku": 7}'
    f.add([NewUrl("http://a.test/x", depth=2, route=route), NewUrl("http://b.test/y"), NewUrl("http://c.test/z")])
    got = _leased(f)
    _failed(f, got["http://a.test/x"], "timeout")
    _failed(f, got["http://b.test/y"], "http-5xx")
    assert f.complete([Completion(got["http://c.test/z"].token, got["http://c.test/z"].shard)]) == [None]
    assert f.counters().get("failed-kept") == 2 and actual(f) == (0, 0) and f.is_finished()

    others: Counter[str] = Counter()
    assert f.requeue_failed(["dns"], others=others) == 0  # none failed so: the reasons kept are told
    assert others == {"timeout": 1, "http-5xx": 1}
    others.clear()
    assert f.requeue_failed(["timeout"], others=others) == 1 and others == {"http-5xx": 1}
    again = _leased(f)
    assert list(again) == ["http://a.test/x"]
    first = got["http://a.test/x"]
    lease = again["http://a.test/x"]
    assert (lease.depth, lease.route, lease.retries) == (first.depth, first.route, 0)  # fresh retries, same route
    f.complete([Completion(lease.token, lease.shard)])
    assert f.requeue_failed() == 1 and f.requeue_failed() == 0  # each once
    assert list(_leased(f)) == ["http://b.test/y"]
    counters = f.counters()
    assert (counters.get("failed-kept"), counters.get("requeued")) == (0, 2)


def test_a_failure_kept_twice_is_one_url_and_a_stale_completion_keeps_nothing(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add([NewUrl("http://a.test/x")])
    lease = _leased(f)["http://a.test/x"]
    _failed(f, lease, "timeout")
    assert f.complete([Completion(lease.token, lease.shard, failed="timeout")]) != [None]  # its lease is gone
    assert f.requeue_failed() == 1
    lease = _leased(f)["http://a.test/x"]
    _failed(f, lease, "reset")  # failed again after the requeue: kept again, once
    assert f.counters().get("failed-kept") == 1 and f.requeue_failed(["reset"]) == 1


def _failed_in_a_round(f: RedisFrontier, url: str) -> None:
    """``url`` fetched into the recrawl set, queued again by a round, and failed there with its retries used up: its
    state kept (complete.lua), due again at the next round (due 0: at once), and kept for trawl requeue too."""
    f.add([NewUrl(url)])
    (lease,) = _leased(f).values()
    parts = split_url(url)
    assert parts is not None
    state = RecrawlState(lease.host, 0, parts.origin, parts.rest, 1000, date="2026-11-02T10:00:00.000Z").encode()
    f.complete([Completion(lease.token, lease.shard, {}, url, state, 0)])
    assert f.requeue_due() == 1  # a round
    (lease,) = _leased(f).values()
    f.complete([Completion(lease.token, lease.shard, {"err:timeout": 1}, url, state, 0, failed="timeout")])
    assert f.counters().get("failed-kept") == 1


def test_a_failed_url_of_the_recrawl_set_is_queued_once_by_requeue_and_its_round(frontier: FrontierFactory) -> None:
    f = frontier()
    _failed_in_a_round(f, "http://a.test/x")
    assert f.requeue_failed() == 1  # trawl requeue, then the next run's round
    assert f.requeue_due() == 0
    assert [x.url for x in drain(f)] == ["http://a.test/x"]

    _failed_in_a_round(f, "http://b.test/y")
    assert f.requeue_due() == 1  # the next run's round, then trawl requeue while it runs
    assert f.requeue_failed() == 0
    assert [x.url for x in drain(f)] == ["http://b.test/y"]
    assert f.counters().get("failed-kept") == 0


def test_a_kept_failure_followed_by_a_success_is_not_fetched_again_by_requeue(frontier: FrontierFactory) -> None:
    """A page failed in one round and answered in the next: its failure is over, so ``trawl requeue`` has nothing
    to fetch again (it would fetch a page just fetched, out of its round)."""
    f = frontier()
    url = "http://a.test/x"
    _failed_in_a_round(f, url)
    assert f.requeue_due() == 1  # the next round: the page answers
    (lease,) = _leased(f).values()
    parts = split_url(url)
    assert parts is not None
    state = RecrawlState(lease.host, 0, parts.origin, parts.rest, 1000, date="2026-11-03T10:00:00.000Z").encode()
    f.complete([Completion(lease.token, lease.shard, {}, url, state, 10**15)])
    assert f.counters().get("failed-kept") == 0
    assert f.requeue_failed() == 0 and drain(f) == []


def test_requeue_names_the_origins_of_the_urls_it_queued(frontier: FrontierFactory) -> None:
    """trawl requeue has robots.txt asked again where it was given up (node/requeue.py): it needs their origins."""
    f = frontier()
    f.add([NewUrl("http://a.test/x", route='1:parse:{"n": 1}'), NewUrl("http://b.test:8080")])
    for lease in _leased(f).values():
        _failed(f, lease, "robots-unavailable")
    f.add([NewUrl("https://a.test/y?q=1")])  # another origin of a.test: its entry holds its whole URL
    _failed(f, _leased(f)["https://a.test/y?q=1"], "robots-unavailable")
    origins: set[str] = set()
    assert f.requeue_failed(["robots-unavailable"], origins) == 3
    assert origins == {"http://a.test", "https://a.test", "http://b.test:8080"}


def test_robots_states_of_many_origins_are_read_and_forgotten_in_their_shards(frontier: FrontierFactory) -> None:
    """trawl requeue reads the robots.txt state of every origin it queued again and forgets the unavailable ones: one
    round of calls each, whatever shards the origins' hosts are in."""
    f = frontier(shards=16)
    origins = [f"http://h{i}.test" for i in range(40)] + ["https://h1.test", "http://h1.test:8080"]
    for i, origin in enumerate(origins[::2]):
        f.set_robots(origin, b"state %d" % i, 60)
    assert f.robots_states(origins) == [b"state %d" % (i // 2) if i % 2 == 0 else None for i in range(len(origins))]
    f.forget_robots(origins[:10])
    assert f.robots_states(origins[:12]) == [None] * 10 + [b"state 5", None]
    assert f.robots_states([]) == [] and f.forget_robots([]) is None
