"""Reaching Redis: a clear one-line error, without the password, when it is not there."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from pathlib import Path

import pytest
import redis.cluster

from tests.fixtures.sentinel_redis import SentinelPair
from tests.node.clusterrun import TRAWL
from webtrawl.errors import StateError
from webtrawl.frontier import connect_async, connect_sync
from webtrawl.frontier.connect import mask_url
from webtrawl_testweb.local_cluster import LocalRedisCluster


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_tcp_redis_is_a_state_error_without_the_password() -> None:
    url = f"redis://crawler:s3cret@127.0.0.1:{_closed_port()}/0"
    with pytest.raises(StateError) as info:
        connect_sync(url)
    message = str(info.value)
    assert message.startswith("cannot reach Redis at redis://crawler:***@127.0.0.1:")
    assert "s3cret" not in message and "\n" not in message


def test_missing_unix_socket_is_a_state_error(tmp_path: Path) -> None:
    with pytest.raises(StateError, match=r"cannot reach Redis at unix://.*nothing\.sock: .*No such file"):
        connect_sync(f"unix://{tmp_path}/nothing.sock")


def test_async_connect_reports_the_same_way(tmp_path: Path) -> None:
    with pytest.raises(StateError, match=r"password=\*\*\*"):
        asyncio.run(connect_async(f"unix://{tmp_path}/nothing.sock?password=hunter2"))


def test_a_url_that_is_not_redis_is_a_state_error() -> None:
    with pytest.raises(StateError, match="cannot reach Redis at http://x"):
        connect_sync("http://x")


def test_mask_url_hides_passwords_only() -> None:
    assert mask_url("rediss://:pw@h:6380/1") == "rediss://:***@h:6380/1"
    assert mask_url("redis://h:6379") == "redis://h:6379"
    assert mask_url("redis://user@h") == "redis://user@h"
    assert mask_url("redis://u:p:w@h/") == "redis://u:***@h/"
    assert mask_url("unix:///run/r.sock?db=2&password=x") == "unix:///run/r.sock?db=2&password=***"


def test_no_sentinel_answering_names_each_sentinel_by_its_address_in_one_short_line() -> None:
    ports = _closed_port(), _closed_port()
    url = f"redis+sentinel://:s3cret@127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}/trawl"
    for connect in (connect_sync, lambda u: asyncio.run(connect_async(u))):
        with pytest.raises(StateError) as info:
            connect(url)
        message = str(info.value)
        assert message.startswith("cannot reach Redis at redis+sentinel://:***@127.0.0.1:")
        # redis-py named each sentinel by its client's repr: its pool and every connection setting, ~1,500 characters
        assert "<redis" not in message and len(message) < 400, message
        assert all(f"sentinel 127.0.0.1:{port}" in message for port in ports), message
        assert "s3cret" not in message and "\n" not in message


def test_a_redis_url_naming_a_sentinel_says_to_name_its_master_through_it(sentinel_pair: SentinelPair) -> None:
    """The Sentinel's address is the one an operator has: given as redis://, every crawl command was refused by it
    ("unknown command 'EVALSHA'") and each trawl command ended in a traceback."""
    url = f"redis://127.0.0.1:{sentinel_pair.sentinel_port}"
    expected = (
        f"Redis at {url} is a Sentinel, not a Redis server: name the master through it, "
        "redis+sentinel://HOST:PORT/SERVICE (SERVICE: the master's name in the Sentinel's config)"
    )
    for connect in (connect_sync, lambda u: asyncio.run(connect_async(u))):
        with pytest.raises(StateError) as info:
            connect(url)
        assert str(info.value) == expected
    seed = subprocess.run([*TRAWL, "seed", "--redis", url, "--url", "http://a.test/"], capture_output=True, text=True)
    assert seed.returncode == 3 and seed.stderr.splitlines() == [f"trawl: error: {expected}"], seed.stderr
    connect_sync(sentinel_pair.url).close()  # the URL it asks for works


def test_a_sentinel_url_without_its_service_says_what_it_lacks() -> None:
    # before: "... the master's service: redis+sentinel://127.0.0.1:26379", the wrong URL read as the form to use
    with pytest.raises(StateError) as info:
        connect_sync("redis+sentinel://:pw@127.0.0.1:26379")
    assert str(info.value) == (
        "a Sentinel URL names its sentinels and the master's service, redis+sentinel://HOST:PORT[,HOST:PORT...]"
        "/SERVICE, not redis+sentinel://:***@127.0.0.1:26379"
    )


def test_a_cluster_is_found_through_any_node_its_url_names(redis_cluster: LocalRedisCluster) -> None:
    """--redis redis://A,B --cluster: one named node that is down (A) no longer blocks a healthy cluster (B is one
    of its nodes); before, only the first node was ever asked and the URL with a comma did not parse."""
    url = f"redis://127.0.0.1:{_closed_port()},127.0.0.1:{redis_cluster.ports[0]}"
    client = connect_sync(url, cluster=True)
    try:
        assert client.ping(target_nodes=redis.cluster.RedisCluster.PRIMARIES)
    finally:
        client.close()

    async def _ping() -> bool:
        found = await connect_async(url, cluster=True)
        try:
            return bool(await found.ping())
        finally:
            await found.aclose()

    assert asyncio.run(_ping())
    with pytest.raises(StateError, match=r"a cluster node needs HOST:PORT in redis://127.0.0.1:1,nohost"):
        connect_sync("redis://127.0.0.1:1,nohost", cluster=True)
