"""The resolver: --resolve overrides, real DNS packets from a local server, caching, the address policy."""

from __future__ import annotations

import asyncio
import socket

import pytest
from aiohttp import web

from tests.fetch.dnsserver import serve_dns
from tests.fetch.servers import local_cfg, local_client, run, serve_app
from webtrawl.errors import ConfigError, DnsError, IpPolicyError
from webtrawl.fetch import AddressPolicy, Resolver

LOOPBACK = AddressPolicy(["127.0.0.0/8"], [])


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_overrides_exact_suffix_and_catch_all() -> None:
    async def body() -> None:
        resolver = Resolver(
            ["www.site.test=127.0.0.9", "*.site.test=127.0.0.2", "*.test=127.0.0.3", "*=127.0.0.4"], LOOPBACK
        )
        assert await resolver.lookup("www.site.test") == ["127.0.0.9"]
        assert await resolver.lookup("WWW.Site.Test.") == ["127.0.0.9"]  # case and trailing dot ignored
        assert await resolver.lookup("a.b.site.test") == ["127.0.0.2"]  # longest suffix wins
        assert await resolver.lookup("other.test") == ["127.0.0.3"]
        assert await resolver.lookup("example.com") == ["127.0.0.4"]
        assert resolver.queries == 0  # no DNS traffic at all
        await resolver.close()

    run(body())


def test_override_with_several_addresses_keeps_only_allowed_ones() -> None:
    async def body() -> None:
        resolver = Resolver(["multi.test=10.0.0.1,127.0.0.5"], LOOPBACK)
        assert await resolver.lookup("multi.test") == ["127.0.0.5"]
        results = await resolver.resolve("multi.test", 8080, socket.AF_UNSPEC)
        assert [(r["host"], r["port"], r["family"]) for r in results] == [("127.0.0.5", 8080, socket.AF_INET)]
        await resolver.close()

    run(body())


def test_override_to_refused_address_raises_ip_policy() -> None:
    async def body() -> None:
        resolver = Resolver(["*.test=127.0.0.1"], AddressPolicy([], []))
        with pytest.raises(IpPolicyError):
            await resolver.lookup("site.test")
        await resolver.close()

    run(body())


def test_bad_override_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        Resolver(["site.test=not-an-ip"], LOOPBACK)
    with pytest.raises(ConfigError):
        Resolver(["=127.0.0.1"], LOOPBACK)


def test_ip_literal_hosts_skip_dns_but_not_the_policy() -> None:
    async def body() -> None:
        resolver = Resolver([], AddressPolicy([], []))
        assert await resolver.lookup("8.8.8.8") == ["8.8.8.8"]
        with pytest.raises(IpPolicyError):
            await resolver.lookup("0x7f.1")
        assert resolver.queries == 0
        await resolver.close()

    run(body())


def test_dns_answers_are_cached_until_their_ttl() -> None:
    async def body() -> None:
        async with serve_dns({"site.example": ["127.0.0.7"]}, ttl=120) as (ns, server):
            clock = Clock()
            resolver = Resolver([], LOOPBACK, nameservers=[ns], clock=clock)
            assert await resolver.lookup("site.example") == ["127.0.0.7"]
            assert server.asked["site.example"] >= 1  # a real DNS answer
            assert resolver.queries == 1
            clock.now += 119
            assert await resolver.lookup("site.example") == ["127.0.0.7"]
            assert resolver.queries == 1  # served from the cache
            clock.now += 2
            assert await resolver.lookup("site.example") == ["127.0.0.7"]
            assert resolver.queries == 2  # expired: looked up again
            await resolver.close()

    run(body())


def test_unknown_name_is_dns_error_and_remembered_briefly() -> None:
    async def body() -> None:
        async with serve_dns({}) as (ns, server):
            clock = Clock()
            resolver = Resolver([], LOOPBACK, nameservers=[ns], negative_ttl=30, clock=clock)
            with pytest.raises(DnsError):
                await resolver.lookup("missing.example")
            assert server.asked["missing.example"] >= 1
            with pytest.raises(DnsError):
                await resolver.lookup("missing.example")
            assert resolver.queries == 1  # negative answer cached
            clock.now += 31
            with pytest.raises(DnsError):
                await resolver.lookup("missing.example")
            assert resolver.queries == 2
            await resolver.close()

    run(body())


def test_cache_is_bounded() -> None:
    async def body() -> None:
        names = {f"h{i}.example": [f"127.0.0.{i + 1}"] for i in range(5)}
        async with serve_dns(names) as (ns, _server):
            resolver = Resolver([], LOOPBACK, nameservers=[ns], cache_size=2)
            for name in names:
                await resolver.lookup(name)
            assert resolver.queries == 5
            await resolver.lookup("h4.example")  # most recent: still cached
            assert resolver.queries == 5
            assert await resolver.lookup("h0.example") == ["127.0.0.1"]  # evicted long ago: looked up again
            assert resolver.queries == 6
            await resolver.close()

    run(body())


def test_concurrent_lookups_of_one_name_share_a_query() -> None:
    async def body() -> None:
        async with serve_dns({"busy.example": ["127.0.0.8"]}) as (ns, _server):
            resolver = Resolver([], LOOPBACK, nameservers=[ns])
            results = await asyncio.gather(*(resolver.lookup("busy.example") for _ in range(10)))
            assert results == [["127.0.0.8"]] * 10
            assert resolver.queries == 1
            await resolver.close()

    run(body())


def test_dns_name_resolving_to_refused_address_fails_fetch_with_ip_policy() -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="secret")

    async def body() -> None:
        app = web.Application()
        app.router.add_get("/", handler)
        async with serve_app(app) as port, serve_dns({"internal.example": ["127.0.0.1"]}) as (ns, _server):
            cfg = local_cfg(ip_allow=[], resolve=[])  # default policy: public addresses only
            resolver = Resolver([], AddressPolicy([], []), nameservers=[ns])
            async with local_client(cfg, resolver=resolver) as client:
                with pytest.raises(IpPolicyError):
                    await client.fetch(f"http://internal.example:{port}/")
                with pytest.raises(IpPolicyError):  # and the literal, which aiohttp would not resolve
                    await client.fetch(f"http://127.0.0.1:{port}/")

    run(body())


def test_override_to_refused_address_fails_fetch_with_ip_policy() -> None:
    async def body() -> None:
        cfg = local_cfg(ip_allow=[], resolve=["*.test=127.0.0.1"])
        async with local_client(cfg) as client:
            with pytest.raises(IpPolicyError):
                await client.fetch("http://site.test:8080/")

    run(body())


def test_unknown_name_fails_fetch_with_dns_error() -> None:
    async def body() -> None:
        async with serve_dns({}) as (ns, _server):
            resolver = Resolver([], LOOPBACK, nameservers=[ns])
            async with local_client(local_cfg(), resolver=resolver) as client:
                with pytest.raises(DnsError) as info:
                    await client.fetch("http://nowhere.example:8080/")
        assert "nowhere.example" in str(info.value)

    run(body())
