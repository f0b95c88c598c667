"""Proxies that fail, end to end (the real ``trawl crawl`` against :class:`JsWeb`, which is also an HTTP proxy): one
that refuses connections, one that accepts and drops them, one that accepts and never answers, beside a live one:
each is marked dead after a few failures and its hosts move to the live one, so every page is fetched through it.
Alone, a dead proxy is one clear line and an alert, and each URL is recorded with the reason ``proxy``."""

from __future__ import annotations

import asyncio
import socket
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from tests.fixtures.loop_server import LoopServer
from tests.node.crawlrun import Crawl, records
from webtrawl_testweb.jsweb import JsWeb


class _BadProxy(LoopServer):
    """Accepts a connection, reads the request, then drops it (``stall=False``) or never answers."""

    def __init__(self, stall: bool) -> None:
        super().__init__()
        self.stall = stall
        self.requests = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            if self.stall:
                await reader.read()  # until the client gives up
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass
        writer.close()


@contextmanager
def _refusing() -> Iterator[str]:
    dead = socket.socket()  # bound, never listening: connecting is refused
    dead.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{dead.getsockname()[1]}"
    finally:
        dead.close()


def _hosts_covering(slots: int) -> list[str]:
    """plain hosts of JsWeb enough for every one of ``slots`` proxies to be some host's own (crc32 picks it)."""
    hosts, own = [], set()
    for i in range(64):
        host = "plain.js.test" if i == 0 else f"plain{i}.js.test"
        hosts.append(host)
        own.add(zlib.crc32(host.encode()) % slots)
        if len(own) == slots and len(hosts) >= 2 * slots:
            return hosts
    raise AssertionError("no hosts cover every proxy")


def _args(jsweb: JsWeb, proxies: list[str], *extra: str) -> list[str]:
    return [
        *jsweb.crawl_args("127.0.0.1/32"),
        *("--delay", "0.2", "--fetchers", "1", "--total", "2", "--robots", "2", "--robots-retry", "0.2"),
        *(f"--proxy={p}" for p in proxies),
        *extra,
    ]


def test_hosts_of_refusing_dropping_and_stalling_proxies_go_through_the_live_one(tmp_path: Path) -> None:
    with ExitStack() as stack:
        jsweb = stack.enter_context(JsWeb(plain_pages=2))
        refusing = stack.enter_context(_refusing())
        dropping = stack.enter_context(_BadProxy(stall=False))
        stalling = stack.enter_context(_BadProxy(stall=True))
        proxies = [f"http://127.0.0.1:{jsweb.port}", refusing, dropping.url, stalling.url]
        hosts = _hosts_covering(len(proxies))
        out = tmp_path / "crawl"
        via = len(jsweb.proxied)
        extra = ("--robots-give-up", "20", "--max-retries", "20", "--backoff-base", "0.2", "--backoff-max", "1")
        crawl = Crawl(out, [*(jsweb.url(h) for h in hosts), *_args(jsweb, proxies, *extra)])
        assert crawl.wait(300) == 0, crawl.log()[-4000:]
    rows = {row["url"]: row for row in records(out)}
    pages = {jsweb.url(h, p) for h in hosts for p in ("/", *(f"/p/{k}" for k in range(1, 3)))}
    assert pages <= set(rows)
    assert all(row["status"] == 200 and row["error"] is None for row in rows.values()), rows
    assert set(rows) <= set(jsweb.proxied[via:])  # every page came through the live proxy
    assert dropping.requests and stalling.requests  # the bad ones were tried (and given up)
    log = crawl.log()
    for bad in (refusing, dropping.url, stalling.url):
        assert f"proxy {bad} failed 3 requests in a row" in log, log[-4000:]
    assert "no live proxy" not in log and "Traceback" not in log


def test_a_crawl_whose_only_proxy_is_dead_says_so_once_and_records_why(tmp_path: Path) -> None:
    with JsWeb(plain_pages=2) as jsweb, _refusing() as refusing:
        out = tmp_path / "crawl"
        hook = tmp_path / "alerts.txt"
        extra = ("--robots-give-up", "4", "--alert-cmd", f'echo "$TRAWL_ALERT_NAME $TRAWL_ALERT_STATE" >> {hook}')
        seeds = [jsweb.url("plain.js.test"), jsweb.url("plain1.js.test")]
        proxy = refusing.replace("http://", "http://crawler:p@ss-s3cret@")  # a password holding "@"
        crawl = Crawl(out, [*seeds, *_args(jsweb, [proxy], *extra)])
        assert crawl.wait(120) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert refusing.replace("http://", "proxy http://crawler:***@") + " failed 3 requests" in log, log[-4000:]
    assert "s3cret" not in log + "".join(p.read_text() for p in (out / "logs").iterdir())
    assert log.count("no live proxy: every --proxy failed") == 1, log[-4000:]
    assert "alert proxy: no live proxy in 1 of 1 fetchers" in log
    assert "proxy firing" in hook.read_text().splitlines()
    rows = records(out)
    assert sorted(row["url"] for row in rows) == seeds and {row["error"] for row in rows} == {"proxy"}, rows
