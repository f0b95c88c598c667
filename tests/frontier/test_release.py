"""release() and complete(): what happens to the URL and to the host's next-allowed time."""

from __future__ import annotations

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import actual, complete, drain, elapse, host_state, new_urls, queue, release, server_ms
from webtrawl.frontier import STALE, RedisFrontier, Release, UrlAction
from webtrawl.messages import Completion


def test_keep_leaves_the_url_leased_to_its_fetcher_and_frees_the_host(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2"))
    (first,) = f.lease("n1/f0", 5)
    release(f, [first], UrlAction.KEEP, counters={"fetched": 1})
    c = f.counters()
    assert (c.queued, c.inflight, c.get("fetched")) == (1, 1, 1)
    (second,) = f.lease("n1/f0", 5)  # the host is free again while the first page is parsed
    assert second.url == "http://a.test/2"
    # A restarted fetcher takes back both: the one it was fetching and the one not yet completed by a parser.
    assert f.reclaim_owner("n1/f0") == 2
    assert queue(f, "a.test") == ["0/1", "0/2"]  # both back at the head, in their order


def test_head_puts_the_url_back_first_unchanged(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2"))
    (x,) = f.lease("n/f0", 1)
    release(f, [x], UrlAction.HEAD)
    (y,) = f.lease("n/f0", 1)
    assert (y.url, y.retries) == ("http://a.test/1", 0)
    assert y.token != x.token
    assert f.counters().inflight == 1


def test_retry_puts_the_url_last_with_one_more_retry(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2", depth=2))  # one depth: last among its priority level
    (x,) = f.lease("n/f0", 1)
    release(f, [x], UrlAction.RETRY)
    assert [(y.url, y.retries, y.depth) for y in drain(f)] == [("http://a.test/2", 0, 2), ("http://a.test/1", 1, 2)]


def test_host_waits_its_delay_after_release(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2", "http://a.test/3"))
    release(f, f.lease("n/f0", 1), delay_ms=3_600_000)
    assert f.lease("n/f0", 1) == []
    c = f.counters()
    assert (c.ready_hosts, c.waiting_hosts) == (0, 1)
    elapse(f, "a.test")
    release(f, f.lease("n/f0", 1), delay_ms=0)
    assert len(f.lease("n/f0", 1)) == 1


def _fail(f: RedisFrontier, host: str, retry_after_ms: int = 0) -> tuple[int, int]:
    """Lease the host and release it as failed; the wait it got lies in the returned (low, high) bracket."""
    elapse(f, host)
    (x,) = f.lease("n/f0", 1)
    before = server_ms(f)
    f.release([Release(x.token, x.shard, x.host, UrlAction.HEAD, failed=True, retry_after_ms=retry_after_ms)])
    after = server_ms(f)
    nxt = int(host_state(f, host)["n"])
    return nxt - after - 1, nxt - before  # - 1: next-allowed times are rounded up to the next millisecond


def test_failures_back_off_exponentially_then_park_the_host(frontier: FrontierFactory) -> None:
    f = frontier(backoff_base_ms=10_000, backoff_max_ms=1_000_000, park_after=4)
    f.add(new_urls("http://a.test/1"))
    waits = []
    for _ in range(5):
        waits.append(_fail(f, "a.test"))
        assert int(host_state(f, "a.test")["f"]) == len(waits)
    for (low, high), want in zip(waits, [10_000, 20_000, 40_000, 1_000_000, 1_000_000], strict=True):
        assert low <= want <= high
    assert f.counters().get("hosts-parked") == 1
    elapse(f, "a.test")
    release(f, f.lease("n/f0", 1), UrlAction.HEAD, delay_ms=0)
    assert "f" not in host_state(f, "a.test")  # one good answer forgives the failures
    assert len(f.lease("n/f0", 1)) == 1


def test_retry_after_replaces_the_back_off_and_jitter_stays_in_bounds(frontier: FrontierFactory) -> None:
    f = frontier(backoff_base_ms=100_000, backoff_max_ms=1_000_000, backoff_jitter=0.2)
    f.add(new_urls("http://a.test/1"))
    low, high = _fail(f, "a.test")
    assert high >= 80_000 and low <= 120_000
    low, high = _fail(f, "a.test", retry_after_ms=7_000)
    assert low <= 7_000 <= high


def test_stale_release_and_complete_are_ignored_and_counted(frontier: FrontierFactory) -> None:
    f = frontier(lease_ttl_ms=0)
    f.add(new_urls("http://a.test/1"))
    (x,) = f.lease("n/f0", 1)
    assert f.reclaim_expired() == 1
    (y,) = f.lease("n/f1", 1)  # the URL went to another fetcher meanwhile
    release(f, [x], counters={"fetched": 1})
    assert complete(f, [x], stored=1) == 0
    c = f.counters()
    assert (c.get("stale-release"), c.get("stale-complete"), c.get("fetched"), c.get("stored")) == (1, 1, 0, 0)
    release(f, [y])
    assert f.complete([Completion(y.token, y.shard, {"stored": 1}), Completion(y.token, y.shard)]) == [None, STALE]
    c = f.counters()
    assert (c.get("stored"), c.get("stale-complete"), c.queued, c.inflight) == (1, 2, 0, 0)
    assert f.is_finished()


def test_one_complete_call_for_many_shards_fences_each_completion(frontier: FrontierFactory) -> None:
    """On a plain Redis a batch's completions of all shards go in one script call: each stale one (in whichever
    shard, at whichever place) is found, the others take effect, and the counters sum over the shards."""
    f = frontier(shards=8, lease_ttl_ms=0)
    f.add(new_urls(*(f"http://h{i}.test/1" for i in range(12))))
    first = f.lease("n/f0", 12)
    assert len({x.shard for x in first}) > 3 and f.reclaim_expired() == 12
    again = {x.url: x for x in f.lease("n/f1", 12)}  # every URL went to another fetcher meanwhile
    old = first[3::4]  # three stale completions among nine live ones, across shards
    batch = [x if x in old else again[x.url] for x in first]
    sent: list[int] = []
    f.client = _Counting(f.client, sent)  # type: ignore[assignment]
    done = f.complete([Completion(x.token, x.shard, {"stored": 1}) for x in batch])
    assert done == [STALE if x in old else None for x in first]
    assert sent == [1]  # one call
    c = f.counters()
    assert (c.get("stored"), c.get("stale-complete"), c.inflight) == (9, 3, 3)


class _Counting:
    """The client, counting the commands of each pipeline it executes."""

    def __init__(self, client: object, sent: list[int]) -> None:
        self._client, self._sent = client, sent

    def pipeline(self, transaction: bool = False) -> object:
        pipe = self._client.pipeline(transaction=transaction)  # type: ignore[attr-defined]
        execute, sent = pipe.execute, self._sent

        def counted(raise_on_error: bool = True) -> object:
            sent.append(len(pipe.command_stack))
            return execute(raise_on_error=raise_on_error)

        pipe.execute = counted
        return pipe

    def __getattr__(self, name: str) -> object:
        return getattr(self._client, name)


def test_complete_without_release_frees_the_host(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1", "http://a.test/2"))
    assert complete(f, f.lease("n/f0", 1)) == 1
    assert [x.url for x in f.lease("n/f0", 1)] == ["http://a.test/2"]


def test_counters_stay_exact_through_a_mixed_sequence(frontier: FrontierFactory) -> None:
    f = frontier(shards=3)
    f.add(new_urls(*[f"http://h{i % 5}.test/{i}" for i in range(40)]))
    f.add(new_urls(*[f"http://h{i % 5}.test/{i}" for i in range(30, 45)]))
    batch = f.lease("n/f0", 5)
    release(f, batch[:2], UrlAction.KEEP, counters={"fetched": 1})
    release(f, batch[2:3], UrlAction.HEAD)
    release(f, batch[3:4], UrlAction.RETRY)
    assert complete(f, batch[:1], stored=1) == 1
    more = f.lease("n/f1", 5)
    assert f.reclaim_owner("n/f1") == len(more)
    c = f.counters()
    # 45 added, 1 completed, leased now: batch[1] (kept) and batch[4] (never released)
    assert (c.get("added"), c.get("seen"), c.queued, c.inflight) == (45, 10, 42, 2)
    assert (c.queued, c.inflight) == actual(f)
    assert (c.get("fetched"), c.get("stored"), c.get("reclaimed")) == (2, 1, len(more))


def test_a_release_after_its_lease_was_taken_back_is_stale_and_one_sent_twice_is_not(
    frontier: FrontierFactory,
) -> None:
    """The fetcher drops the page of a STALE release (fencing); a release sent again after its reply was lost
    (Redis away a moment) must not look stale, or its page would be dropped and its URL stuck until --process-ttl."""
    f = frontier(lease_ttl_ms=0)
    f.add(new_urls("http://a.test/1", "http://b.test/1"))
    x, y = sorted(f.lease("n/f0", 2), key=lambda lease: lease.host)
    (mine,) = f.release([Release(x.token, x.shard, x.host)])
    assert mine is None
    assert f.release([Release(x.token, x.shard, x.host)]) == [None]  # sent again: done once, not stale
    assert f.reclaim_expired() == 1  # y expired: taken back
    assert f.release([Release(y.token, y.shard, y.host)]) == [STALE]
    assert complete(f, [x], stored=1) == 1
    c = f.counters()
    assert (c.get("stale-release"), c.get("repeated-release"), c.get("stored"), c.queued, c.inflight) == (1, 1, 1, 1, 0)
