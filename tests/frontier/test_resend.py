"""What a failover takes with the master's last writes: a completion acknowledged but never replicated is sent again
when the parser finds its watermark behind (frontier/resend.py), and a page completed without its release (lost the
same way) frees its host a politeness gap from now, not at once (complete.lua).

A server restarted from a snapshot taken before the last writes loses them just as a replica promoted before it
caught up does, deterministically: the tests take the snapshot (SAVE) where a replica would have stopped."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

import webtrawl.frontier.replicas as barrier
import webtrawl.frontier.resend as resend
from tests.fixtures.fault_proxy import FaultProxy
from tests.fixtures.redis_fixtures import TEST_SETTINGS, FrontierFactory
from tests.fixtures.restartable_redis import RestartableRedis
from tests.frontier.helpers import actual, complete, drain, elapse, host_key, release, server_ms
from tests.frontier.helpers import new_urls as urls
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.frontier.keys import ready_key, shard_tag
from webtrawl.frontier.retry import Outage
from webtrawl.frontier.scripts import SCRIPTS
from webtrawl.messages import Completion
from webtrawl.parse.settle import FINISH_ENCODER, Finish, settle
from webtrawl.store.batchlog import BatchLog


@pytest.fixture
def snapshot_redis(tmp_path: Path) -> Iterator[RestartableRedis]:
    with RestartableRedis(tmp_path / "redis", aof=False) as server:
        yield server


def _parser_frontier(server: RestartableRedis) -> RedisFrontier:
    """A parser's frontier on a Redis with a replica (worker.py): it rides out outages and keeps its completions."""
    f = RedisFrontier.open(connect_sync(server.url), FrontierSettings(**TEST_SETTINGS), outage=Outage("parser 0"))
    f.add(urls("http://a.test/1", "http://b.test/1"))
    f.keep_completions("n-p0")
    return f


def _fail_over(server: RestartableRedis) -> None:
    server.kill()
    server.start()  # from the snapshot: what came after it is gone


def test_a_completion_a_failover_lost_is_sent_again_once_redis_is_back(
    snapshot_redis: RestartableRedis, caplog: pytest.LogCaptureFixture
) -> None:
    f = _parser_frontier(snapshot_redis)
    leases = f.lease("n/f0", 10)
    release(f, leases)
    f.client.save()  # the replica got this far
    assert complete(f, leases, fetched=1) == 2  # acknowledged by the master, then lost with it
    _fail_over(snapshot_redis)
    assert actual(f) == (0, 2)  # still leased: they would wait out --process-ttl
    assert f.lease("n/f0", 10) == []  # their hosts are held too
    f.add(urls("http://c.test/1"))
    other = f.lease("n/f0", 10)
    release(f, other)
    with caplog.at_level(logging.INFO, logger="webtrawl.frontier"):
        assert complete(f, other, fetched=1) == 1  # the next completion call finds its watermark behind
    assert "sent 2 completion(s) again, 2 of them were missing" in caplog.text
    assert actual(f) == (0, 0) and f.is_finished()
    counters = f.counters()
    assert (counters.get("recompleted"), counters.get("fetched"), counters.get("stale-complete")) == (2, 3, 0)


def test_only_the_calls_after_the_last_that_survived_are_sent_again(
    snapshot_redis: RestartableRedis, caplog: pytest.LogCaptureFixture
) -> None:
    f = _parser_frontier(snapshot_redis)
    f.add(urls("http://c.test/1"))
    first, second = f.lease("n/f0", 2), f.lease("n/f0", 1)
    release(f, [*first, *second])
    assert complete(f, first, fetched=1) == 2
    f.client.save()  # replicated up to here
    assert complete(f, second, fetched=1) == 1  # lost
    _fail_over(snapshot_redis)
    with caplog.at_level(logging.INFO, logger="webtrawl.frontier"):
        f.check_completions()  # too soon after the last call: nothing asked
        assert "sent" not in caplog.text
        f.complete([])  # nothing to complete: nothing sent, nothing learnt
        assert "sent" not in caplog.text
    f.add(urls("http://d.test/1"))
    third = f.lease("n/f0", 1)
    release(f, third)
    with caplog.at_level(logging.INFO, logger="webtrawl.frontier"):
        assert complete(f, third, fetched=1) == 1
    assert "sent 1 completion(s) again, 1 of them were missing" in caplog.text
    counters = f.counters()
    assert (counters.get("recompleted"), counters.get("fetched"), counters.get("stale-complete")) == (1, 4, 0)
    assert actual(f) == (0, 0)


def test_an_idle_parser_reads_its_watermark_and_sends_them_again(
    snapshot_redis: RestartableRedis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resend, "_IDLE_CHECK_S", 0.0)
    f = _parser_frontier(snapshot_redis)
    leases = f.lease("n/f0", 10)
    release(f, leases)
    f.client.save()
    complete(f, leases)
    _fail_over(snapshot_redis)
    assert actual(f) == (0, 2)  # lost: still leased
    f.check_completions()  # the parser's loop while no page comes: no completion call would find it out
    assert actual(f) == (0, 0)


def test_a_restarted_parser_does_not_take_its_last_lifes_watermark_for_a_loss(
    snapshot_redis: RestartableRedis, caplog: pytest.LogCaptureFixture
) -> None:
    f = _parser_frontier(snapshot_redis)
    leases = f.lease("n/f0", 10)
    release(f, leases[:1])
    complete(f, leases[:1])
    f.keep_completions("n-p0")  # its next life, same name: the watermark it finds is its last life's
    release(f, leases[1:])
    with caplog.at_level(logging.INFO, logger="webtrawl.frontier"):
        assert complete(f, leases[1:]) == 1
    assert "sent" not in caplog.text and actual(f) == (0, 0)


def _ready_at(f: RedisFrontier, host: str) -> float:
    score = f.client.zscore(ready_key(shard_tag(f.core.settings.prefix, f.shard_of(host)), 0), host)
    assert score is not None
    return float(score)


@pytest.mark.parametrize("released_before", [False, True])
def test_a_page_completed_without_its_release_frees_its_host_a_gap_from_now(
    frontier: FrontierFactory, released_before: bool
) -> None:
    """The release (which sets the host's next-allowed time) was lost: the fetch may have ended just now, so the
    host waits its last answer's gap (``d``) or the crawl's default from the completion, as a reclaim does."""
    f = frontier(host_gap_ms=60_000)
    f.add(urls("http://a.test/1", "http://a.test/2", "http://a.test/3"))
    gap = 60_000
    if released_before:  # an earlier page's answer asked for 5 s (Crawl-delay): that gap wins
        first = f.lease("n/f0", 1)
        release(f, first, delay_ms=5_000)
        complete(f, first)
        elapse(f, "a.test")
        f.client.hset(host_key(f, "a.test", "h"), "n", 0)  # its gap has passed
        gap = 5_000
    leases = f.lease("n/f0", 1)
    assert len(leases) == 1
    before = server_ms(f)
    assert complete(f, leases) == 1  # no release came
    assert before + gap <= _ready_at(f, "a.test") <= server_ms(f) + gap + 1


@pytest.mark.parametrize("replicas", [True, False])
def test_a_completion_whose_reply_was_lost_is_not_taken_for_stale_when_sent_again(
    snapshot_redis: RestartableRedis, caplog: pytest.LogCaptureFixture, replicas: bool
) -> None:
    """A partition that begins right after Redis ran a completion call: the parser times out and sends the call
    again, which finds the leases gone, its own doing. They were counted ``stale-complete`` and the parser warned
    that the records may be stored twice; the watermark says the call is its own (complete.lua). A parser on a
    Redis without replicas keeps the watermark too, not the calls."""
    with FaultProxy(snapshot_redis.port) as proxy:
        client = connect_sync(proxy.url(), socket_timeout=1)  # the partition is noticed in a second, not ten
        f = RedisFrontier.open(client, FrontierSettings(**TEST_SETTINGS), outage=Outage("parser 0"))
        f.add(urls("http://a.test/1", "http://b.test/1", "http://c.test/1"))
        f.keep_completions("n-p0", resend=replicas)
        first, second = f.lease("n/f0", 1), f.lease("n/f0", 2)
        release(f, [*first, *second])
        assert complete(f, first, fetched=1) == 1
        muted = proxy.mute_after(SCRIPTS["complete"].sha.encode())
        with caplog.at_level(logging.INFO, logger="webtrawl.frontier"):
            assert complete(f, second, fetched=1) == 2  # ran, its reply lost; sent again on a new connection
        assert muted.is_set() and "Redis is away" in caplog.text
        counters = f.counters()
        assert (counters.get("fetched"), counters.get("stale-complete")) == (3, 0)
        assert actual(f) == (0, 0) and f.is_finished()
        client.close()


def test_a_busy_parser_finds_a_loss_on_a_shard_it_no_longer_completes_on(
    snapshot_redis: RestartableRedis, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """On a cluster each shard has its watermark. A parser that is never idle and whose pages are all on other
    shards now (its other hosts) did not read that shard's watermark, and dropped the lost calls there after 30 s
    of other calls: their pages stayed leased until --process-ttl (600 s), the end of the crawl with them."""
    monkeypatch.setattr(resend, "WINDOW_S", 0.0)  # any later call would have dropped them (30 s, in a crawl)
    monkeypatch.setattr(resend, "_IDLE_CHECK_S", 3600.0)  # no read until the failover: all within one second
    f = RedisFrontier.open(connect_sync(snapshot_redis.url), FrontierSettings(**TEST_SETTINGS), outage=Outage("p"))
    f.core.one_slot = True  # as on a cluster: a call and its watermark per shard
    hosts = [f"h{i}.test" for i in range(40)]
    lost = hosts[0]
    busy = [h for h in hosts if f.shard_of(h) != f.shard_of(lost)][:3]
    f.add(urls(*(f"http://{h}/1" for h in [lost, *busy])))
    f.keep_completions("n-p0")
    leases = {x.host: x for x in f.lease("n/f0", 10)}
    release(f, leases.values())
    assert complete(f, [leases[busy[0]]]) == 1
    f.client.save()
    assert complete(f, [leases[lost]]) == 1  # acknowledged, then lost with the master
    _fail_over(snapshot_redis)
    monkeypatch.setattr(resend, "_IDLE_CHECK_S", 0.0)  # a second later
    with caplog.at_level(logging.INFO, logger="webtrawl.frontier"):
        for host in busy[1:]:  # busy: one completion call after the other, none on the lost one's shard
            assert complete(f, [leases[host]]) == 1
    assert "sent 1 completion(s) again, 1 of them were missing" in caplog.text
    assert actual(f) == (0, 0) and f.is_finished()


@pytest.mark.parametrize("redone_by", ["parser", "node"])
@pytest.mark.parametrize("call_ran", [True, False])
def test_a_batch_a_killed_parser_had_completed_is_not_taken_for_stale_when_redone(
    frontier: FrontierFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture, redone_by: str, call_ran: bool
) -> None:
    """A parser killed -9 once its batch's completion call ran, before it emptied its batch log: its next life (or
    the node's start) completes the batch again and finds the leases gone, its own doing. They were counted
    ``stale-complete`` and logged as "records may be stored twice" though nothing was. A batch whose call never
    ran, its leases taken back meanwhile (fetched again elsewhere), still is stale and says so."""
    f = frontier()
    f.add(urls("http://a.test/1", "http://b.test/1", "http://c.test/1"))
    f.keep_completions("n-p0")
    earlier = f.lease("n/f0", 1)  # the killed life's earlier batch: its watermark is below the logged one's
    release(f, earlier)
    assert complete(f, earlier) == 1
    leases = f.lease("n/f0", 2)
    release(f, leases)
    path = tmp_path / "batches" / "n-p0.log"
    batch_log = BatchLog(path)
    batch_log.begin([])
    completions = [Completion(x.token, x.shard, {"stored": 1}) for x in leases]
    batch_log.ready(FINISH_ENCODER.encode(Finish([], [], completions, f.completion_mark())))
    if call_ran:
        assert f.complete(completions) == [None, None]  # then killed, the log not emptied
    else:
        assert f.reclaim_owner("n") == 2  # killed before the call; its leases were taken back
    if redone_by == "parser":
        f.keep_completions("n-p0")  # its next life
        redo = f
    else:
        redo = RedisFrontier.open(f.client, f.core.settings)  # the supervisor's: no watermark of its own
    with caplog.at_level(logging.INFO, logger="webtrawl.parse"):
        settle(path, redo, None, None)
    assert "completed the 2 page(s) a killed parser had stored" in caplog.text
    counters = f.counters()
    if call_ran:
        assert "stored twice" not in caplog.text
        assert (counters.get("stored"), counters.get("stale-complete"), actual(f)) == (2, 0, (0, 0))
    else:
        assert "2 completion(s) discarded" in caplog.text and "stored twice" in caplog.text
        assert (counters.get("stored"), counters.get("stale-complete"), actual(f)) == (0, 2, (2, 0))


def test_links_no_replica_confirmed_are_added_again_with_their_lost_completions(
    snapshot_redis: RestartableRedis, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A planned Sentinel failover (SENTINEL FAILOVER) under a crawl: the old master takes writes for seconds after
    its replica was promoted (no replica to WAIT for: the barrier skips it), then is demoted and drops them. The
    parser sent the lost completions again, and the pages were done on the new master without the links they had
    added: those URLs were never crawled (a test crawl missed dozens). The links are added again first."""
    monkeypatch.setattr(barrier, "_short_until", {})
    f = _parser_frontier(snapshot_redis)
    f.replicas = 1  # this Redis has none: its WAIT falls short, as the old master's does once its replica is promoted
    leases = f.lease("n/f0", 10)
    release(f, leases)
    f.client.save()  # the promoted replica got this far
    f.add(urls("http://a.test/2", "http://c.test/1"))  # the pages' links
    assert complete(f, leases, fetched=1) == 2
    _fail_over(snapshot_redis)
    f.add(urls("http://d.test/1"))
    other = f.lease("n/f0", 10)
    assert [x.url for x in other] == ["http://d.test/1"]  # the links are gone
    release(f, other)
    with caplog.at_level(logging.INFO, logger="webtrawl.frontier"):
        assert complete(f, other, fetched=1) == 1  # finds the watermark behind
    assert "2 of 2 added again" in caplog.text and "sent 2 completion(s) again, 2 of them were missing" in caplog.text
    assert {x.url for x in drain(f)} == {"http://a.test/2", "http://c.test/1"}
    assert actual(f) == (0, 0) and f.is_finished()
