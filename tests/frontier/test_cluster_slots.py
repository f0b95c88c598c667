"""Every key one script run touches lies in one Redis Cluster slot: watched live with MONITOR."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import redis
from redis.crc import key_slot

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import complete, new_urls, release
from webtrawl.frontier import UrlAction
from webtrawl.frontier.keys import shard_tag


def _script_runs(monitor: redis.client.Monitor, sentinel: str) -> Iterator[tuple[str, list[str]]]:
    """(KEYS[1], keys of the commands the script ran) for each EVALSHA seen until ``sentinel`` is echoed."""
    current: tuple[str, list[str]] | None = None
    while True:
        event: dict[str, str] = monitor.next_command()  # type: ignore[no-untyped-call]
        args = event["command"].split(" ")
        if event["client_type"] == "lua":
            if current is not None and args[0].upper() not in ("TIME", "PUBLISH"):  # a channel is not a key
                current[1].append(args[1])
            continue
        if current is not None:
            yield current
            current = None
        if args[0].upper() == "ECHO" and sentinel in event["command"]:
            return
        if args[0].upper() == "EVALSHA":
            current = (args[3], [])


def test_each_script_run_stays_in_the_slot_of_its_declared_key(
    frontier: FrontierFactory, redis_client: redis.Redis
) -> None:
    sentinel = f"end-{uuid.uuid4().hex}"
    frontier(shards=1)  # the scripts loaded first: an EVALSHA refused with NOSCRIPT runs nothing
    with redis_client.monitor() as monitor:  # type: ignore[no-untyped-call]
        f = frontier(shards=16, lease_ttl_ms=0)
        f.core.one_slot = True  # as on a cluster client; a plain client puts many shards in one add call
        f.add(new_urls(*[f"http://h{i}.test/p/{i}" for i in range(40)], "http://h1.test:81/other"))
        leased = f.lease("n/f0", 20)
        release(f, leased[:5], UrlAction.KEEP)
        release(f, leased[5:8], UrlAction.HEAD)
        release(f, leased[8:10], UrlAction.RETRY, failed=True)
        complete(f, leased[:3])
        f.reclaim_tokens([(x.shard, x.token) for x in leased[:5]])  # a dead parser's: two not completed
        f.reclaim_expired()
        f.lease("n/f1", 20)
        f.reclaim_owner("n")
        g = frontier(shards=16, park_after=1)  # a host's first failure parks it: its queue is given up
        g.core.one_slot = True
        g.add(new_urls(*[f"http://down.test/{i}" for i in range(5)]))
        (down,) = g.lease("n/f2", 1)
        release(g, [down], UrlAction.RETRY, failed=True)
        assert len(g.give_up(down.shard, "down.test", "n/f2").leases) == 4
        # an origin whose robots.txt was given up: its URLs taken from the middle of its host's queue
        g.add(new_urls(*[f"http://robots.test/{i}" for i in range(4)]))
        g.add(new_urls(*[f"https://robots.test/{i}" for i in range(3)], "http://robots.test/last"))
        given = g.give_up(g.shard_of("robots.test"), "robots.test", "n/f2", limit=3, origin="https://robots.test")
        assert len(given.leases) == 3
        f.counters()
        redis_client.echo(sentinel)
        runs = list(_script_runs(monitor, sentinel))
    assert len(runs) > 16
    touched = 0
    for declared, keys in runs:
        assert keys, f"script with key {declared} ran no command"
        assert {key_slot(k.encode()) for k in keys} == {key_slot(declared.encode())}, (declared, keys)
        touched += len(keys)
    assert touched > 200


def test_on_a_plain_redis_one_add_call_carries_every_shard(
    frontier: FrontierFactory, redis_client: redis.Redis
) -> None:
    sentinel = f"end-{uuid.uuid4().hex}"
    with redis_client.monitor() as monitor:  # type: ignore[no-untyped-call]
        f = frontier(shards=16)
        assert not f.core.one_slot
        result = f.add(new_urls(*[f"http://h{i}.test/p/{i}" for i in range(40)]))
        redis_client.echo(sentinel)
        runs = list(_script_runs(monitor, sentinel))
    assert result.added == 40
    adds = [keys for _, keys in runs if any(":bloom" in k for k in keys)]
    assert len(adds) == 1
    # the slots of the shards the hosts fall in: two shards' hash tags can share a slot (CRC16 of random prefixes)
    shards = {f.shard_of(f"h{i}.test") for i in range(40)}
    assert len(shards) == 16
    assert {key_slot(k.encode()) for k in adds[0]} == {
        key_slot(shard_tag(f.core.settings.prefix, s).encode()) for s in shards
    }
