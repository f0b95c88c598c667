"""robots.txt caching: the process's LRU, the frontier's store shared by processes, the stored encoding (and the
older ones a resumed crawl meets), one request per origin at a time."""

from __future__ import annotations

import asyncio
import functools
import zlib
from collections.abc import Callable

import msgspec
import pytest
from aiohttp import web

from tests.fetch.servers import local_cfg, run
from tests.politeness.robots_env import BEHAVIOUR, HITS, ROBOTS_TTL, RULES, robots_env
from webtrawl.fetch import RobotsCache
from webtrawl.politeness import RobotsRules


def test_lru_then_store_then_other_process() -> None:
    async def body() -> None:
        async with robots_env(max_entries=1) as (port, app, cache, store, clock):
            rules_origin = f"http://rules.test:{port}"
            delay_origin = f"http://delay.test:{port}"
            assert await cache.cached(rules_origin) is None  # nothing anywhere yet
            fetched = await cache.fetch(rules_origin)
            gets = store.gets
            assert await cache.cached(rules_origin) is fetched  # process-local hit
            assert store.gets == gets
            await cache.fetch(delay_origin)  # evicts rules.test from the 1-entry LRU
            from_store = await cache.cached(rules_origin)
            assert store.gets > gets
            assert from_store is not None and from_store is not fetched
            assert not from_store.allowed(f"{rules_origin}/private/x")
            assert from_store.crawl_delay == 2.5
            assert app[HITS]["rules.test"] == 1  # never fetched twice

            other = local_cfg()
            other_process = RobotsCache(store, cache._client, other.fetch, other.politeness, other.limits, clock=clock)
            shared = await other_process.cached(rules_origin)
            assert shared is not None and shared.allowed(f"{rules_origin}/public")

            clock.now += ROBOTS_TTL + 1
            assert await cache.cached(rules_origin) is None  # expired everywhere
            assert await other_process.cached(rules_origin) is None

    run(body())


def test_concurrent_fetches_of_one_origin_share_one_request() -> None:
    async def body() -> None:
        async with robots_env() as (port, app, cache, _store, _clock):
            origin = f"http://rules.test:{port}"
            results = await asyncio.gather(*(cache.fetch(origin) for _ in range(5)))
            assert app[HITS]["rules.test"] == 1
            assert all(r is results[0] for r in results)

    run(body())


def test_encode_is_compact_and_round_trips() -> None:
    body = RULES + b"# " + b"comment " * 2000 + b"\n"
    rules = RobotsRules(body, token="webtrawl", status=200, failures=0, expires_at=123.0)
    data = rules.encode()
    assert len(data) < len(body) // 4  # the rules are stored, compressed, not the comments
    back = RobotsRules.decode(data)
    assert back.token == "webtrawl" and back.expires_at == 123.0 and back.body_bytes == len(body)
    assert back.allowed("http://x.test/public") and not back.allowed("http://x.test/private/a")
    assert back.allowed("http://x.test/private/ok") and not back.allowed("http://x.test/also-secret")
    assert back.crawl_delay == 2.5
    again = RobotsRules.decode(back.encode())  # a loaded value stores the same rules again
    assert not again.allowed("http://x.test/also-secret") and again.crawl_delay == 2.5
    down = RobotsRules.decode(RobotsRules(unavailable=True, failures=3, error="http-5xx").encode())
    assert down.unavailable and down.failures == 3 and down.error == "http-5xx"
    with pytest.raises(ValueError):
        RobotsRules.decode(b"definitely not msgpack of ours")


def _version_1(body: bytes, compress: Callable[[bytes], bytes] | None = None) -> bytes:
    """A value as nodes before stored-rules wrote it: the whole body (zlib-compressed if ``compress``)."""
    stored = [1, "webtrawl", 200, False, 0, 0.0, "", compress is not None, compress(body) if compress else body]
    return msgspec.msgpack.encode(stored)


def test_rules_stored_whole_by_an_earlier_version_still_decode() -> None:
    # Stores written before the rules were stored instead of the body, compressed by zlib or ISA-L (the same
    # format), or not at all: a crawl resumed by this version reads them.
    body = RULES + b"# " + b"comment " * 2000 + b"\n"
    for value in (_version_1(body, lambda b: zlib.compress(b, 6)), _version_1(body)):
        back = RobotsRules.decode(value)
        assert back.body == body and not back.allowed("http://x.test/private/a") and back.crawl_delay == 2.5
        assert RobotsRules.decode(back.encode()).crawl_delay == 2.5
    cut = msgspec.msgpack.decode(_version_1(body, lambda b: zlib.compress(b, 6)))
    cut[8] = cut[8][:-10]  # cut short: not ours to guess
    with pytest.raises(ValueError):
        RobotsRules.decode(msgspec.msgpack.encode(cut))


def test_stored_rules_are_one_product_tokens() -> None:
    stored = RobotsRules.decode(RobotsRules(RULES, token="webtrawl").encode())
    assert stored.usable_for("webtrawl", stored.max_bytes)
    assert not stored.usable_for("otherbot", stored.max_bytes)  # otherbot's group says Allow: /
    assert not stored.usable_for("webtrawl", stored.max_bytes + 1)  # a bigger cap could read more rules
    whole = RobotsRules.decode(_version_1(RULES))
    assert whole.usable_for("otherbot", 1024)  # the body itself: compiled for any token
    nothing = RobotsRules.decode(RobotsRules(b"", token="webtrawl").encode())
    assert nothing.usable_for("otherbot", 1024) and nothing.allowed("http://x.test/private")


def test_a_fetcher_with_another_product_token_fetches_again() -> None:
    async def body() -> None:
        async with robots_env() as (port, app, cache, store, clock):
            origin = f"http://rules.test:{port}"
            await cache.fetch(origin)
            other = local_cfg(user_agent="otherbot/1.0")
            theirs = RobotsCache(store, cache._client, other.fetch, other.politeness, other.limits, clock=clock)
            assert await theirs.cached(origin) is None  # webtrawl's rules are not otherbot's
            assert (await theirs.fetch(origin)).allowed(f"{origin}/private/x")
            assert app[HITS]["rules.test"] == 2

    run(body())


def test_lru_bound_counts_the_compiled_rules_not_just_the_body() -> None:
    one_origin = RobotsRules(RULES, token="webtrawl").size
    assert one_origin > 2 * len(RULES)

    async def body() -> None:
        async with robots_env(max_bytes=one_origin + len(RULES)) as (port, _app, cache, store, _clock):
            rules_origin = f"http://rules.test:{port}"
            await cache.fetch(rules_origin)
            gets = store.gets
            assert await cache.cached(rules_origin) is not None
            assert store.gets == gets  # kept in the process
            await cache.fetch(f"http://delay.test:{port}")  # counted by its compiled size: no room for both
            assert await cache.cached(rules_origin) is not None
            assert store.gets > gets  # came back from the store

    run(body())


def test_origins_whose_robots_txt_redirects_to_one_host_share_one_request() -> None:
    """Every subdomain's robots.txt redirecting to www's (or http's to https', a CDN's customers' to one file): each
    origin fetched it, all at once and without that host's gap (eight origins sent it eight requests in the same
    millisecond). The origins of a process share one download, and the crawl's processes the rules stored; each
    origin keeps its own copy (its failures, its expiry)."""

    async def body() -> None:
        async with robots_env() as (port, app, cache, store, clock):
            names = [f"sub{i}.test" for i in range(8)]
            for name in names:
                app[BEHAVIOUR][name] = app[BEHAVIOUR]["cross.test"]  # 302 to http://rules.test/robots.txt
            got = await asyncio.gather(*(cache.fetch(f"http://{name}:{port}") for name in names[:6]))
            assert app[HITS]["rules.test"] == 1
            assert len({id(rules) for rules in got}) == 6
            assert all(not r.allowed(f"http://{n}:{port}/private/x") for r, n in zip(got, names, strict=False))
            assert all(r.allowed(f"http://{n}:{port}/public") for r, n in zip(got, names, strict=False))
            later = await cache.fetch(f"http://{names[6]}:{port}")
            other = local_cfg()
            other_process = RobotsCache(store, cache._client, other.fetch, other.politeness, other.limits, clock=clock)
            elsewhere = await other_process.fetch(f"http://{names[7]}:{port}")
            assert app[HITS]["rules.test"] == 1
            assert [app[HITS][name] for name in names] == [1] * 8
            assert later.crawl_delay == elsewhere.crawl_delay == 2.5

            # hosts redirecting to each other: no shared download waits for another, the loop ends as before
            async def to(other: str, _request: web.Request) -> web.Response:
                return web.Response(status=301, headers={"Location": f"http://{other}:{port}/robots.txt"})

            app[BEHAVIOUR]["ping.test"] = functools.partial(to, "pong.test")
            app[BEHAVIOUR]["pong.test"] = functools.partial(to, "ping.test")
            ping, pong = await asyncio.gather(
                cache.fetch(f"http://ping.test:{port}"), cache.fetch(f"http://pong.test:{port}")
            )
            assert ping.error == pong.error == "redirects" and ping.allowed(f"http://ping.test:{port}/x")

    run(body())
