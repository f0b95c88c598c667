"""The crawl's private redis-server: private, persistent across restarts, and startable after a kill -9."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.node.crawlrun import running, wait_until
from webtrawl.errors import StateError
from webtrawl.frontier import FrontierSettings, RedisFrontier, Release, UrlAction, connect_sync
from webtrawl.messages import NewUrl
from webtrawl.node.redis_server import EmbeddedRedis


def _dir(tmp_path: Path) -> Path:
    return tmp_path / "redis"


def test_server_listens_on_a_private_unix_socket_only(tmp_path: Path) -> None:
    with EmbeddedRedis(_dir(tmp_path)) as server:
        assert server.url == f"unix://{_dir(tmp_path) / 'redis.sock'}"
        assert stat.S_IMODE(_dir(tmp_path).stat().st_mode) == 0o700
        assert stat.S_IMODE((_dir(tmp_path) / "redis.sock").stat().st_mode) == 0o700
        client = connect_sync(server.url)
        config = client.config_get("*")
        wanted = {"port": "0", "appendonly": "yes", "appendfsync": "everysec", "save": ""}
        assert {k: config[k] for k in wanted} == wanted
        assert EmbeddedRedis.running_url(_dir(tmp_path)) == server.url
        client.close()
    assert EmbeddedRedis.running_url(_dir(tmp_path)) is None
    assert not (_dir(tmp_path) / "redis.sock").exists()


def test_the_frontier_survives_a_clean_stop_and_start(tmp_path: Path) -> None:
    settings = FrontierSettings(prefix="wt", shards=8, expected_urls=1000, empty_poll_ms=0)
    with EmbeddedRedis(_dir(tmp_path)) as server:
        client = connect_sync(server.url)
        f = RedisFrontier.open(client, settings)
        f.add([NewUrl(f"http://h{i}.test/{j}") for i in range(3) for j in range(3)])
        leased = f.lease("n/f0", 2)
        f.release([Release(x.token, x.shard, x.host, UrlAction.KEEP, delay_ms=0) for x in leased])
        f.set_robots("http://h0.test", b"User-agent: *\nDisallow:", 3600)
        before = f.counters()
        client.close()
    with EmbeddedRedis(_dir(tmp_path)) as server:
        client = connect_sync(server.url)
        f = RedisFrontier.open(client, FrontierSettings(prefix="wt", shards=64, empty_poll_ms=0))
        assert f.shards == 8  # the stored crawl wins over new settings
        assert f.counters().values == before.values
        assert f.get_robots("http://h0.test") == b"User-agent: *\nDisallow:"
        assert f.add([NewUrl("http://h0.test/0")]).seen == 1
        assert f.reclaim_owner("n") == 2
        assert len(f.lease("n/f0", 10)) == 3
        client.close()


def test_start_works_after_a_kill_9_left_pidfile_and_socket(tmp_path: Path) -> None:
    server = EmbeddedRedis(_dir(tmp_path)).start()
    assert server.pid is not None
    os.kill(server.pid, signal.SIGKILL)
    assert server._proc is not None
    server._proc.wait()
    assert (_dir(tmp_path) / "redis.pid").exists() and (_dir(tmp_path) / "redis.sock").exists()
    assert EmbeddedRedis.running_url(_dir(tmp_path)) is None
    with EmbeddedRedis(_dir(tmp_path)) as again:
        assert not again.adopted
        assert connect_sync(again.url).ping()


_STARTER = """
import sys
from webtrawl.frontier import connect_sync
from webtrawl.node.redis_server import EmbeddedRedis
from tests.node.crawlrun import running, wait_until
server = EmbeddedRedis(sys.argv[1]).start()
connect_sync(server.url).set("written-before-the-kill", "1")
print(server.pid, flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a parent-death signal is Linux's")
def test_a_kill_9_of_the_process_that_started_the_server_ends_it_cleanly(tmp_path: Path) -> None:
    """A node killed with kill -9 leaves no redis-server running for ever: the server ends with it, flushing its
    AOF, and the next start reads back what it had acknowledged."""
    starter = subprocess.Popen(
        [sys.executable, "-c", _STARTER, str(_dir(tmp_path))], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert starter.stdout is not None
    pid = int(starter.stdout.readline())
    starter.kill()
    starter.wait()
    try:
        wait_until(lambda: not running(pid), 30, f"redis-server {pid} to end with its starter")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not (_dir(tmp_path) / "redis.pid").exists()  # a clean shutdown, not a death
    with EmbeddedRedis(_dir(tmp_path)) as again:
        assert not again.adopted
        assert connect_sync(again.url).get("written-before-the-kill") == b"1"


def test_start_adopts_a_server_still_running_for_the_dir(tmp_path: Path) -> None:
    with EmbeddedRedis(_dir(tmp_path)) as first:
        second = EmbeddedRedis(_dir(tmp_path)).start()
        assert second.adopted and second.url == first.url and second.pid == first.pid


def test_a_server_that_cannot_start_reports_its_log(tmp_path: Path) -> None:
    data = _dir(tmp_path)
    data.mkdir(mode=0o700)
    (data / "appendonly.aof").write_text("this is not an AOF file\n")
    with pytest.raises(StateError, match=r"redis-server exited .*(AOF|append|Bad file format)"):
        EmbeddedRedis(data).start()


def test_a_socket_path_too_long_for_unix_sockets_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="too long"):
        EmbeddedRedis(tmp_path / ("x" * 120)).start()
