"""Taking leases back from dead or slow processes loses no URL and completes none twice."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import actual, complete, drain, elapse, host_state, new_urls, queue, release, server_ms
from webtrawl.frontier import STALE, Release, UrlAction
from webtrawl.frontier.planner import LeasePlanner
from webtrawl.messages import Completion, Lease


def test_expired_leases_go_back_to_the_head_of_their_queue(frontier: FrontierFactory) -> None:
    f = frontier(lease_ttl_ms=0)
    f.add(new_urls("http://a.test/1", "http://a.test/2", "http://b.test/1"))
    leased = f.lease("n/f0", 5)
    assert len(leased) == 2
    assert f.reclaim_expired() == 2
    assert f.reclaim_expired() == 0
    assert queue(f, "a.test") == ["0/1", "0/2"]
    c = f.counters()
    assert (c.queued, c.inflight, c.get("reclaimed"), c.ready_hosts) == (3, 0, 2, 2)
    assert sorted(x.url for x in drain(f)) == ["http://a.test/1", "http://a.test/2", "http://b.test/1"]


def test_a_host_taken_back_from_a_dead_fetch_waits_its_gap_from_now(frontier: FrontierFactory) -> None:
    """The dead fetcher's request may have reached the server just before the kill: politeness counts from now."""
    f = frontier(host_gap_ms=3_600_000)
    f.add(new_urls("http://a.test/1", "http://a.test/2"))
    f.lease("n/f0", 1)
    assert f.reclaim_owner("n/f0") == 1
    assert f.lease("n/f1", 1) == []  # not ready: it waits the gap
    assert int(host_state(f, "a.test")["n"]) >= server_ms(f) + 3_500_000
    elapse(f, "a.test")
    assert [x.url for x in f.lease("n/f1", 1)] == ["http://a.test/1"]


def test_unexpired_leases_stay(frontier: FrontierFactory) -> None:
    f = frontier(lease_ttl_ms=3_600_000)
    f.add(new_urls("http://a.test/1"))
    f.lease("n/f0", 1)
    assert f.reclaim_expired() == 0
    assert f.counters().inflight == 1


def test_an_expired_kept_lease_returns_while_its_host_is_busy_with_the_next_url(frontier: FrontierFactory) -> None:
    f = frontier(process_ttl_ms=0)
    f.add(new_urls("http://a.test/1", "http://a.test/2"))
    (first,) = f.lease("n/f0", 1)
    release(f, [first], UrlAction.KEEP)  # to the parsers, who die
    (second,) = f.lease("n/f0", 1)
    assert f.reclaim_expired() == 1
    assert f.lease("n/f1", 1) == []  # the host is still busy with the second URL
    release(f, [second], UrlAction.KEEP)
    assert [x.url for x in f.lease("n/f1", 1)] == ["http://a.test/1"]


def test_a_kept_url_of_an_idle_host_is_leasable_again_after_its_parser_died(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls("http://a.test/1"))
    release(f, f.lease("n1/f0", 1), UrlAction.KEEP)
    assert f.lease("n1/f0", 1) == []
    assert f.reclaim_owner("n1") == 1
    assert [x.url for x in drain(f)] == ["http://a.test/1"]


def test_the_pages_a_dead_parser_held_go_back_and_those_it_completed_do_not(frontier: FrontierFactory) -> None:
    f = frontier(shards=4)
    f.add(new_urls(*[f"http://h{i}.test/" for i in range(4)]))
    leased = f.lease("n1/f0", 4)
    assert len(leased) == 4
    release(f, leased, UrlAction.KEEP)  # all four handed to one parser
    complete(f, leased[:1])  # which stored the first, then died
    held = [(x.shard, x.token) for x in leased]
    assert f.reclaim_tokens([*held, (leased[0].shard, "n1/f0.0-999999")]) == 3  # an unknown token is no lease
    assert f.reclaim_tokens(held) == 0
    assert sorted(x.url for x in drain(f)) == sorted(x.url for x in leased[1:])
    assert f.counters().inflight == 0


def test_reclaim_owner_takes_a_node_or_one_process(frontier: FrontierFactory) -> None:
    f = frontier()
    f.add(new_urls(*[f"http://h{i}.test/" for i in range(6)]))
    f0, f01, other = f.lease("n1/f0", 2), f.lease("n1/f01", 2), f.lease("n2/f0", 2)
    release(f, f0[:1], UrlAction.KEEP)  # still owned by n1/f0 until a parser completes it
    assert f.reclaim_owner("n1/f0") == 2  # the fetching and the kept one, not n1/f01
    assert f.reclaim_owner("n1") == 2  # n1/f01 twice
    assert f.reclaim_owner("n") == 0  # "n" is not a prefix of "n2/..." at a '/' boundary
    assert f.counters().inflight == len(other) == 2
    assert len(f0 + f01) == 4


class _Model(RuleBasedStateMachine):
    """Random adds, leases by live and dying processes, releases, completions, kills and expiries."""

    factory: FrontierFactory

    def __init__(self) -> None:
        super().__init__()
        prefix = f"m{uuid.uuid4().hex[:10]}"
        # What a lease gets must depend on Redis's state only, never on the clock or chance: hypothesis replays
        # each example and needs the same draws. So no gap after a reclaim (host_gap_ms; the gaps are tested
        # above), and below, planners that never rest a shard and always start their sweep at shard 0.
        common: dict[str, Any] = {"prefix": prefix, "backoff_base_ms": 0, "park_after": 0, "host_gap_ms": 0}
        self.live = self.factory(**common)
        self.dying = self.factory(**common, lease_ttl_ms=0, process_ttl_ms=0)  # its leases expire at once
        for f in (self.live, self.dying):  # every process starts its sweep at a random shard; here always at 0
            f.core.planner = LeasePlanner(f.shards, f.core.settings.shards_per_lease, 0.0, start=0)
        self.added: set[str] = set()
        self.completed: dict[str, int] = {}
        self.fetching: dict[str, Lease] = {}  # token -> lease, host held
        self.parsing: dict[str, Lease] = {}  # token -> lease, kept for the parsers
        self.expiring: set[str] = set()  # tokens with a deadline already past
        self.stale: list[Lease] = []
        self.n = 0

    @rule(hosts=st.lists(st.integers(0, 4), min_size=1, max_size=5))
    def add(self, hosts: list[int]) -> None:
        urls = [f"http://h{h}.test/p{self.n + i}" for i, h in enumerate(hosts)]
        self.n += len(urls)
        assert self.live.add(new_urls(*urls)).added == len(urls)
        self.added.update(urls)

    @rule(n=st.integers(1, 4), node=st.sampled_from(["a", "b"]), dying=st.booleans())
    def lease(self, n: int, node: str, dying: bool) -> None:
        got = (self.dying if dying else self.live).lease(f"{node}/f0", n)
        busy = {x.host for x in self.fetching.values()}
        for x in got:
            assert x.host not in busy
            busy.add(x.host)
            self.fetching[x.token] = x
            if dying:
                self.expiring.add(x.token)

    @precondition(lambda self: self.fetching)
    @rule(data=st.data(), action=st.sampled_from(UrlAction), failed=st.booleans(), dying=st.booleans())
    def release(self, data: st.DataObject, action: UrlAction, failed: bool, dying: bool) -> None:
        token = data.draw(st.sampled_from(sorted(self.fetching)))
        x = self.fetching.pop(token)
        f = self.dying if dying else self.live
        f.release([Release(x.token, x.shard, x.host, action=action, delay_ms=0, failed=failed)])
        self.expiring.discard(token)
        if action == UrlAction.KEEP:
            self.parsing[token] = x
            if dying:
                self.expiring.add(token)
        else:
            self.stale.append(x)

    @precondition(lambda self: self.parsing or self.fetching)
    @rule(data=st.data())
    def complete(self, data: st.DataObject) -> None:
        token = data.draw(st.sampled_from(sorted(self.parsing) + sorted(self.fetching)))
        x = self.parsing.pop(token, None) or self.fetching.pop(token)
        self.expiring.discard(token)
        assert self.live.complete([Completion(x.token, x.shard)]) == [None]
        self.completed[x.url] = self.completed.get(x.url, 0) + 1
        self.stale.append(x)

    @precondition(lambda self: self.stale)
    @rule(data=st.data())
    def complete_stale(self, data: st.DataObject) -> None:
        x = data.draw(st.sampled_from(self.stale))
        assert self.live.complete([Completion(x.token, x.shard)]) == [STALE]

    @rule(node=st.sampled_from(["a", "b", "a/f0"]))
    def kill(self, node: str) -> None:
        gone = [t for t in {**self.fetching, **self.parsing} if self._killed(t, node)]
        assert self.live.reclaim_owner(node) == len(gone)
        self._forget(gone)

    @rule()
    def expire(self) -> None:
        gone = sorted(self.expiring)
        assert self.live.reclaim_expired() == len(gone)
        self._forget(gone)

    def _killed(self, token: str, node: str) -> bool:
        owner = token.rpartition(".")[0]
        return owner == node or owner.startswith(node + "/")

    def _forget(self, tokens: list[str]) -> None:
        for t in tokens:
            x = self.fetching.pop(t, None) or self.parsing.pop(t)
            self.expiring.discard(t)
            self.stale.append(x)

    @invariant()
    def counters_match(self) -> None:
        c = self.live.counters()
        inflight = len(self.fetching) + len(self.parsing)
        done = sum(self.completed.values())
        assert (c.queued, c.inflight) == (len(self.added) - done - inflight, inflight)
        assert (c.queued, c.inflight) == actual(self.live)

    def teardown(self) -> None:
        self.live.reclaim_owner("a")
        self.live.reclaim_owner("b")
        for x in drain(self.live, "z/f0"):
            self.completed[x.url] = self.completed.get(x.url, 0) + 1
        assert self.live.is_finished()
        assert self.completed == dict.fromkeys(self.added, 1)


def test_every_added_url_is_completed_exactly_once(frontier: FrontierFactory) -> None:
    _Model.factory = staticmethod(frontier)
    run_state_machine_as_test(
        _Model,
        settings=settings(
            max_examples=40, stateful_step_count=30, deadline=None, suppress_health_check=list(HealthCheck)
        ),
    )
