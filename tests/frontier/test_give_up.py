"""A host that fails --park-after times in a row gives up its queued URLs (release.lua, giveup.lua): its URL ends
(no more retries), the queue is leased in chunks to the fetcher for their failed pages, nothing is lost if that
fetcher dies, and trawl requeue queues them again. An origin whose robots.txt was given up gives up its own queued
URLs the same way, and only those."""

from __future__ import annotations

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import actual, elapse, host_state, new_urls, queue
from webtrawl.frontier import Parked, RedisFrontier, Release, UrlAction
from webtrawl.frontier.keys import ready_key, shard_tag
from webtrawl.messages import Completion, Lease, NewUrl
from webtrawl.names import PRIORITY_LEVELS

_URLS = [f"http://down.test/{i}" for i in range(25)]


def _fail(f: RedisFrontier, host: str, action: UrlAction = UrlAction.RETRY) -> tuple[Lease, object]:
    """Lease the host's next URL and release it as a failure (a 503 the fetcher would retry)."""
    elapse(f, host)
    (x,) = [lease for lease in f.lease("n/f0", 10) if lease.host == host]
    (answer,) = f.release([Release(x.token, x.shard, host, action, failed=True, counters={"retries": 1})])
    return x, answer


def _ready(f: RedisFrontier, host: str) -> bool:
    tag = shard_tag(f.core.settings.prefix, f.shard_of(host))
    return any(f.client.zscore(ready_key(tag, level), host) is not None for level in range(PRIORITY_LEVELS))


def _parked(f: RedisFrontier) -> Lease:
    """down.test with its 25 URLs failed twice (--park-after 2): returns the URL whose failure parked it."""
    f.add(new_urls(*_URLS))
    _, first = _fail(f, "down.test")
    assert first is None  # one failure: backed off, its URL retried later
    second, answer = _fail(f, "down.test")
    assert answer == Parked(2)
    f.add(new_urls("http://up.test/1"))  # another host: not concerned
    return second


def test_a_parked_host_gives_up_its_queue_in_chunks_leased_to_its_fetcher(frontier: FrontierFactory) -> None:
    f = frontier(backoff_base_ms=10, backoff_max_ms=3_600_000, park_after=2, backoff_jitter=0.0)
    second = _parked(f)
    assert second.url == _URLS[1]
    c = f.counters()
    # its URL stayed leased for the parsers (a RETRY made a KEEP), its retry not counted; the first one went back
    assert (c.queued, c.inflight, c.get("retries"), c.get("hosts-parked")) == (25, 1, 1, 1)
    shard = f.shard_of("down.test")
    chunks = [f.give_up(shard, "down.test", "n/f0", limit=10) for _ in range(3)]
    assert [(len(g.leases), g.more, g.failures) for g in chunks] == [(10, True, 2), (10, True, 2), (4, False, 2)]
    given = [x for g in chunks for x in g.leases]
    assert sorted(x.url for x in given) == sorted(u for u in _URLS if u != second.url)  # each once, none fetched
    assert {x.retries for x in given if x.url == _URLS[0]} == {1}
    assert f.give_up(shard, "down.test", "n/f0").leases == []
    c = f.counters()
    # given-up is counted by the parsers with their completion: a dead fetcher's are given up (and counted) again
    assert (c.queued, c.inflight, c.get("given-up")) == (1, 25, 0) and actual(f) == (1, 25)
    assert host_state(f, "down.test")["q"] == "0" and not _ready(f, "down.test")
    assert [x.host for x in f.lease("n/f1", 10)] == ["up.test"]  # nothing of down.test is leased

    f.complete([Completion(x.token, x.shard, failed="host-down") for x in [second, *given]])
    c = f.counters()
    assert (c.queued, c.inflight, c.get("failed-kept")) == (0, 1, 25)
    assert f.requeue_failed(["host-down"]) == 25 and f.counters().queued == 25
    assert sorted(queue(f, "down.test")) == sorted(f"0/{i}" for i in range(25))  # fresh retries


def test_given_up_urls_of_a_dead_fetcher_go_back_to_their_queue(frontier: FrontierFactory) -> None:
    f = frontier(backoff_base_ms=10, backoff_max_ms=3_600_000, park_after=2, backoff_jitter=0.0)
    _parked(f)
    before = queue(f, "down.test")
    got = f.give_up(f.shard_of("down.test"), "down.test", "n/f0", limit=10)
    assert len(got.leases) == 10
    assert f.reclaim_owner("n/f0") == 11  # the fetcher died before its parsers had the pages: none is lost
    assert queue(f, "down.test")[1:] == before  # back at the head, in their order, the parked URL first
    c = f.counters()
    assert (c.queued, c.inflight) == (26, 0) and actual(f) == (26, 0)
    assert f.complete([Completion(x.token, x.shard, failed="host-down") for x in got.leases]).count(None) == 0


def test_only_a_parked_host_gives_up_and_later_urls_wait_for_their_try(frontier: FrontierFactory) -> None:
    f = frontier(backoff_base_ms=10, backoff_max_ms=3_600_000, park_after=3, backoff_jitter=0.0)
    f.add(new_urls(*_URLS[:5]))
    shard = f.shard_of("down.test")
    _fail(f, "down.test")
    assert f.give_up(shard, "down.test", "n/f0").leases == []  # one failure: not parked
    _fail(f, "down.test")
    _, answer = _fail(f, "down.test", UrlAction.KEEP)  # a failure with its retries used up parks it too
    assert answer == Parked(3)
    assert len(f.give_up(shard, "down.test", "n/f0").leases) == 4
    f.add(new_urls("http://down.test/later"))  # found later: queued, tried after the parked wait
    assert f.lease("n/f0", 10) == [] and f.counters().queued == 1
    later, answer = _fail(f, "down.test")
    assert (later.url, answer) == ("http://down.test/later", Parked(4))  # its try failed: it ends too
    f.add(new_urls("http://down.test/again"))
    elapse(f, "down.test")
    (ok,) = f.lease("n/f0", 1)
    f.release([Release(ok.token, ok.shard, "down.test", UrlAction.KEEP)])  # it answered: no longer parked
    f.add(new_urls("http://down.test/after"))
    assert "f" not in host_state(f, "down.test") and f.give_up(shard, "down.test", "n/f0").leases == []


def test_park_after_0_never_parks_nor_gives_up(frontier: FrontierFactory) -> None:
    f = frontier(backoff_base_ms=10, backoff_max_ms=20, park_after=0, backoff_jitter=0.0)
    f.add(new_urls(*_URLS[:3]))
    answers = [_fail(f, "down.test")[1] for _ in range(10)]
    assert answers == [None] * 10 and f.counters().get("retries") == 10
    assert f.give_up(f.shard_of("down.test"), "down.test", "n/f0").leases == []
    assert f.counters().queued == 3


_MIXED = [
    NewUrl("http://down.test/a0"),
    NewUrl("https://down.test/s0"),  # another origin of the host: its entry holds its whole URL
    NewUrl("http://down.test/a1", priority=2),
    NewUrl("http://down.test:8080/p0"),  # another port: another origin, another robots.txt
    NewUrl("http://down.test/a2?x=1", route="^7:weird route"),  # a spider's route ahead of its rest
    NewUrl("http://down.test/a3", priority=2),
    NewUrl("https://down.test/s1", priority=2),
    NewUrl("http://down.test"),  # no path: its rest is empty
    NewUrl("http://down.test/a4"),
]


def test_an_origin_whose_robots_txt_was_given_up_gives_up_its_queued_urls_only(frontier: FrontierFactory) -> None:
    f = frontier(park_after=8)
    f.add(_MIXED)
    shard, before = f.shard_of("down.test"), queue(f, "down.test")
    (held,) = f.lease("n/f9", 10)  # a URL in flight (another origin's) does not stop it: no try can help
    assert held.url == "http://down.test/a0"
    chunks = [f.give_up(shard, "down.test", "n/f0", limit=2, origin="http://down.test") for _ in range(3)]
    assert [(len(g.leases), g.more, g.failures) for g in chunks] == [(2, True, 0), (2, True, 0), (1, False, 0)]
    given = [x for g in chunks for x in g.leases]
    mine = [u.url for u in _MIXED[1:] if u.url.startswith("http://down.test") and ":8080" not in u.url]
    assert sorted(x.url for x in given) == sorted(mine)
    assert [x.route for x in given if "a2" in x.url] == ["^7:weird route"]
    left = ["https://down.test/s0", "http://down.test:8080/p0", "https://down.test/s1"]
    assert [e for e in queue(f, "down.test")] == [e for e in before if any(e.endswith(u) for u in left)]
    c = f.counters()
    assert (c.queued, c.inflight, c.get("given-up")) == (3, 6, 0) and actual(f) == (3, 6)
    assert host_state(f, "down.test")["q"] == "3" and f.give_up(shard, "down.test", "n/f0", origin="x").leases == []

    assert f.reclaim_owner("n/f0") == 5  # the fetcher died before its parsers had the pages: none is lost
    assert sorted(queue(f, "down.test")) == sorted(before[1:])
    assert f.complete([Completion(x.token, x.shard, failed="x") for x in given]).count(None) == 0  # nor ends twice
    again = f.give_up(shard, "down.test", "n/f1", origin="http://down.test")
    assert sorted(x.url for x in again.leases) == sorted(mine) and not again.more
    f.release([Release(held.token, held.shard, "down.test", UrlAction.KEEP)])
    f.complete([Completion(x.token, x.shard, failed="robots-unavailable") for x in [held, *again.leases]])
    elapse(f, "down.test")  # the other origins' URLs are still leased as before
    assert sorted(x.url for x in f.lease("n/f2", 10)) == ["https://down.test/s0"]
    assert f.requeue_failed(["robots-unavailable"]) == 6 and f.counters().queued == 8


def test_an_origin_gives_up_every_url_of_a_host_with_no_other(frontier: FrontierFactory) -> None:
    f = frontier(park_after=0)  # never parks: the robots.txt give-up does not need it
    f.add(new_urls(*_URLS))
    shard = f.shard_of("down.test")
    got = f.give_up(shard, "down.test", "n/f0", limit=100, origin="http://down.test")
    assert sorted(x.url for x in got.leases) == sorted(_URLS) and not got.more
    assert queue(f, "down.test") == [] and not _ready(f, "down.test") and f.lease("n/f1", 10) == []
