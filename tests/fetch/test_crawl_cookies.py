"""--cookies' crawl-wide jar (fetch/cookies.py) between the HTTP clients of two fetchers, on a real Redis and a real
Redis Cluster: what one client's answers set or delete reaches the other at its next load, per cookie."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest
import redis
from aiohttp import web

from tests.fetch.servers import local_cfg, local_client, run, serve_app
from tests.fixtures.redis_fixtures import TEST_SETTINGS, delete_prefix
from webtrawl.fetch.client import HttpClient
from webtrawl.fetch.cookies import SharedCookies
from webtrawl.frontier import AsyncRedisFrontier, FrontierSettings, connect_async, connect_sync
from webtrawl.frontier.keys import cookies_key
from webtrawl_testweb.local_cluster import LocalRedisCluster

SETS = {
    "/login": ["sid=abc; Path=/", "pref=x; Domain=jar.test; Path=/"],
    "/logout": ["sid=; Max-Age=0; Path=/"],
    "/a": ["a=1; Path=/"],
    "/b": ["b=2; Path=/"],
    "/same": ["same=1; Path=/"],
}


async def _answer(request: web.Request) -> web.Response:
    resp = web.Response(text=request.headers.get("Cookie", ""))
    for line in SETS.get(request.path, []):
        resp.headers.add("Set-Cookie", line)
    return resp


def _app() -> web.Application:
    app = web.Application()
    app.router.add_get("/{tail:.*}", _answer)
    return app


class Crawl:
    """Two fetchers' clients (and a third, for a later look) on one crawl's Redis, and the site."""

    def __init__(self, url: str, cluster: bool) -> None:
        self.url, self.cluster = url, cluster
        self.prefix = f"t{uuid.uuid4().hex[:12]}"
        self.frontier: AsyncRedisFrontier

    @asynccontextmanager
    async def clients(self, count: int) -> AsyncIterator[tuple[int, list[HttpClient]]]:
        client = await connect_async(self.url, cluster=self.cluster)
        settings = FrontierSettings(**{**TEST_SETTINGS, "prefix": self.prefix})
        self.frontier = await AsyncRedisFrontier.open(client, settings)
        try:
            async with AsyncExitStack() as stack:
                port = await stack.enter_async_context(serve_app(_app()))
                cfg = local_cfg(cookies=True, ports=[port])
                clients = [
                    await stack.enter_async_context(local_client(cfg, cookie_store=self.frontier)) for _ in range(count)
                ]
                yield port, clients
        finally:
            await client.aclose()


@pytest.fixture(params=["redis", "cluster"])
def crawl(request: pytest.FixtureRequest) -> Iterator[Crawl]:
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        found = Crawl(url, cluster=False)
    else:
        cluster: LocalRedisCluster = request.getfixturevalue("redis_cluster")
        found = Crawl(cluster.url, cluster=True)
    yield found
    sync = connect_sync(found.url, cluster=found.cluster)
    if found.cluster:
        sync.flushall(target_nodes=redis.cluster.RedisCluster.PRIMARIES)
    else:
        delete_prefix(sync, found.prefix)
    sync.close()


def _jar(client: HttpClient) -> SharedCookies:
    assert client.cookies is not None
    return client.cookies


async def _sent(client: HttpClient, port: int, host: str = "www") -> list[str]:
    """The cookies ``client`` sends to ``host``.jar.test, as the server read them (after a lease of it)."""
    await _jar(client).load([f"{host}.jar.test"])
    resp = await client.fetch(f"http://{host}.jar.test:{port}/echo")
    return sorted(resp.body.decode().split("; ")) if resp.body else []


def test_what_one_fetcher_is_set_or_told_to_delete_reaches_the_other(crawl: Crawl) -> None:
    """Domain rules hold across them (the host-only ``sid`` only to www), and a logout's deletion reaches the other
    fetcher, which had the cookie in its own jar already."""

    async def body() -> None:
        async with crawl.clients(2) as (port, (a, b)):
            await a.fetch(f"http://www.jar.test:{port}/login")
            assert await _sent(b, port) == ["pref=x", "sid=abc"]
            assert await _sent(b, port, "api") == ["pref=x"]
            await a.fetch(f"http://www.jar.test:{port}/logout")
            assert await _sent(b, port) == ["pref=x"]
            assert await _sent(a, port) == ["pref=x"]
            # one hash for the registered domain, on the shard of its name (a cluster routes it by that tag)
            stored = await crawl.frontier.client.hgetall(
                cookies_key(crawl.prefix, crawl.frontier.core.shards, "jar.test")
            )
            assert len(stored) == 1

    run(body())


def test_two_fetchers_setting_cookies_of_one_domain_at_once_keep_both(crawl: Crawl) -> None:
    """Written cookie by cookie: the later write does not put back the jar the other one's answer changed."""

    async def body() -> None:
        async with crawl.clients(3) as (port, (a, b, later)):
            await asyncio.gather(_jar(a).load(["www.jar.test"]), _jar(b).load(["www.jar.test"]))
            await asyncio.gather(a.fetch(f"http://www.jar.test:{port}/a"), b.fetch(f"http://www.jar.test:{port}/b"))
            assert await _sent(later, port) == ["a=1", "b=2"]

    run(body())


def test_only_an_answer_that_changed_the_jar_writes(redis_url: str, redis_client: redis.Redis) -> None:
    """A lease reads its domain once; an answer without Set-Cookie, or setting a cookie the jar has as it is, writes
    nothing."""
    crawl = Crawl(redis_url, cluster=False)

    def calls(name: str) -> int:
        stats: dict[str, Any] = redis_client.info("commandstats")
        return int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))

    async def body() -> None:
        async with crawl.clients(1) as (port, (a,)):
            await a.fetch(f"http://www.jar.test:{port}/same")
            hsets, hgetalls = calls("hset"), calls("hgetall")
            await _jar(a).load(["www.jar.test"])
            assert calls("hgetall") == hgetalls + 1
            for path in ("/echo", "/same", "/echo"):
                await a.fetch(f"http://www.jar.test:{port}{path}")
            assert calls("hset") == hsets
            await a.fetch(f"http://www.jar.test:{port}/a")
            assert calls("hset") == hsets + 1

    try:
        run(body())
    finally:
        delete_prefix(redis_client, crawl.prefix)
