"""A lease call whose reply is lost (the connection dropped after Redis ran the script) and that is sent again gets
the same leases: it carries the same request id, and lease.lua kept the fetcher's last call (its id and tokens).
Without that the repeat would lease more hosts and the first leases would sit until their TTL, their hosts blocked."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tests.fixtures.redis_fixtures import TEST_SETTINGS, FrontierFactory
from tests.fixtures.restartable_redis import RestartableRedis
from tests.fixtures.tcp_proxy import TcpProxy
from tests.frontier.helpers import actual, complete, drain, new_urls, release
from webtrawl.frontier import (
    AsyncRedisFrontier,
    FrontierSettings,
    RedisFrontier,
    UrlAction,
    connect_async,
    connect_sync,
    redis_frontier,
)
from webtrawl.frontier.keys import shard_tag
from webtrawl.frontier.redis_frontier import _execute
from webtrawl.frontier.retry import Outage
from webtrawl.frontier.scripts import Call
from webtrawl.messages import Lease
from webtrawl.names import LEASE_REPLY

URLS = [f"http://h{i}.test/{j}" for i in range(6) for j in range(2)]


def _lease_twice(monkeypatch: pytest.MonkeyPatch, between: Callable[[], object] = lambda: None) -> None:
    """Run every lease pipeline twice and answer with the second run: a reply lost and the call sent again
    (``between`` runs in between)."""

    def execute(client: Any, calls: Sequence[Call], outage: Outage | None = None) -> list[Any]:
        if calls and calls[0].script == "lease":
            _execute(client, calls, outage)
            between()
        return _execute(client, calls, outage)

    monkeypatch.setattr(redis_frontier, "_execute", execute)


def test_a_lease_call_sent_again_gets_the_same_leases(
    frontier: FrontierFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = frontier()
    f.add(new_urls(*URLS))
    _lease_twice(monkeypatch)
    leases = f.lease("n/f0", 4)
    assert len(leases) == 4 and len({x.host for x in leases}) == 4
    assert actual(f) == (len(URLS) - 4, 4)  # nothing leased twice, no lease orphaned
    c = f.counters()
    assert (c.inflight, c.queued) == (4, len(URLS) - 4)
    assert c.get("lease-repeats") >= 1
    again = f.lease("n/f0", 10)  # new calls: new leases, of the other hosts
    assert {x.host for x in again}.isdisjoint(x.host for x in leases) and len(again) == 2
    tags = [shard_tag(f.core.settings.prefix, shard) for shard in range(f.shards)]
    assert {f.client.hlen(tag + LEASE_REPLY) for tag in tags} <= {0, 1}  # one field per fetcher, not per call
    release(f, [*leases, *again], UrlAction.HEAD)
    monkeypatch.undo()
    assert sorted(x.url for x in drain(f)) == sorted(URLS)


def test_a_repeat_gets_only_the_leases_still_held(frontier: FrontierFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeat that comes after the leases were taken back must not hand them out again."""
    f = frontier(shards=1)
    f.add(new_urls(*URLS))
    taken: list[int] = []
    _lease_twice(monkeypatch, lambda: taken.append(f.reclaim_owner("n/f0")))
    assert f.lease("n/f0", 3) == []
    assert taken == [3]
    assert actual(f) == (len(URLS), 0)


def _lease_through(proxy: TcpProxy, settings: FrontierSettings, asynchronous: bool) -> list[Lease]:
    """Lease through the proxy with the reply lost once: the frontier waits the outage out and sends again."""
    url = f"redis://127.0.0.1:{proxy.port}"
    if not asynchronous:
        f = RedisFrontier.open(connect_sync(url), settings, outage=Outage("test"))
        proxy.lose_next_reply()
        leases = f.lease("n/f0", 4)
        f.client.close()
        return leases

    async def run() -> list[Lease]:
        client = await connect_async(url)
        f = await AsyncRedisFrontier.open(client, settings, outage=Outage("test"))
        proxy.lose_next_reply()
        leases = await f.lease("n/f0", 4)
        await client.aclose()
        return leases

    return asyncio.run(run())


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_lost_lease_reply_is_sent_again_and_gets_the_same_leases(
    restartable_redis: RestartableRedis, asynchronous: bool
) -> None:
    settings = FrontierSettings(**{**TEST_SETTINGS, "prefix": "lr", "shards": 1})  # one shard: one call per round
    direct = RedisFrontier.open(connect_sync(restartable_redis.url), settings)
    direct.add(new_urls(*URLS))
    with TcpProxy(restartable_redis.port) as proxy:
        leases = _lease_through(proxy, settings, asynchronous)
    assert len(leases) == 4
    c = direct.counters()
    assert (c.get("lease-repeats"), c.inflight) == (1, 4)  # the lost call ran once and was answered again
    assert actual(direct) == (len(URLS) - 4, 4)
    release(direct, leases, UrlAction.HEAD)
    assert sorted(x.url for x in drain(direct)) == sorted(URLS)
    direct.client.close()


def test_a_counter_gone_back_in_time_gives_out_no_token_twice(frontier: FrontierFactory) -> None:
    """A failover to a replica that missed the last writes (or a restart from an AOF that missed its last second)
    loses leases and the counter's increments together. The token counter must not hand a lost lease's token out
    again: the fetcher's late completion of the lost lease would complete the new lease's URL, unfetched (lost)."""
    f = frontier(shards=1)
    f.add(new_urls(*URLS))
    seq_key = shard_tag(f.core.settings.prefix, 0) + "seq"
    before = f.client.get(seq_key)
    lost = f.lease("n/f0", 2)
    release(f, lost)  # fetched, held for the parsers: its completion comes later
    # what the promoted replica holds: neither the leases nor the increments they took
    assert f.reclaim_owner("n/f0") == 2
    f.client.set(seq_key, before) if before is not None else f.client.delete(seq_key)
    fresh = f.lease("n/f0", 2)
    assert len(fresh) == 2 and {x.token for x in fresh}.isdisjoint(x.token for x in lost)
    assert complete(f, lost) == 0  # the late completions are discarded, not taken for the new leases
    assert actual(f) == (len(URLS) - 2, 2)
    release(f, fresh, UrlAction.HEAD)
    assert sorted(x.url for x in drain(f)) == sorted(URLS)
