"""The chaos hosts as a test expects them: every behaviour has a host and a path, the hub links to all of them,
and the DNS server answers for real on 127.0.0.1."""

from __future__ import annotations

import asyncio

import pytest

from tests.fixtures.web_fixtures import chaos_of, fetch
from webtrawl.errors import DnsError, IpPolicyError
from webtrawl.fetch.addrpolicy import AddressPolicy
from webtrawl.fetch.dns import Resolver
from webtrawl_testweb import BEHAVIOURS, TestWeb
from webtrawl_testweb.chaosbodies import REDIRECT_CHAIN


@pytest.fixture
def web(chaos_web: TestWeb) -> TestWeb:
    return chaos_web


def test_the_hub_links_every_behaviour_and_every_hostile_link(web: TestWeb) -> None:
    chaos = chaos_of(web)
    (hub,) = fetch(web, [chaos.hub])
    body = hub.body.decode()
    for name in BEHAVIOURS:
        assert f'href="{chaos.url(name)}"' in body
    for href in chaos.hostile_links():
        assert href.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in body


def test_statuses_redirects_and_robots_by_host(web: TestWeb) -> None:
    chaos = chaos_of(web)
    got = {f.url: f for f in fetch(web, [chaos.url(n) for n in ("err503-retry-after", "err429", "err500")])}
    assert got[chaos.url("err503-retry-after")].status == 503
    assert got[chaos.url("err503-retry-after")].headers["Retry-After"] == "1"
    assert got[chaos.url("err429")].status == 429 and got[chaos.url("err500")].status == 500
    hops = fetch(web, [chaos.url("redirect-chain", f"/hop/{n}") for n in range(1, REDIRECT_CHAIN + 1)])
    assert [h.status for h in hops] == [301] * (REDIRECT_CHAIN - 1) + [200]
    (loop,) = fetch(web, [chaos.url("redirect-loop", "/loop/b")])
    assert loop.headers["Location"] == "/loop/a"
    robots = fetch(web, [chaos.url(n, "/robots.txt") for n in ("robots-huge", "robots-binary", "robots-redirect")])
    assert len(robots[0].body) > 5_000_000 and robots[0].body.endswith(b"Disallow: /late\n")
    assert robots[1].headers["Content-Type"] == "application/octet-stream"
    assert robots[2].status == 301 and robots[2].headers["Location"] == "/rules.txt"


def test_traps_never_end(web: TestWeb) -> None:
    chaos = chaos_of(web)
    urls = [chaos.url("calendar", "/cal/2999/12"), chaos.url("repeat", "/a/a/a/a/a/"), chaos.url("session")]
    cal, deep, s1, s2 = fetch(web, [*urls, chaos.url("session")])
    assert b"/cal/3000/01" in cal.body and b'href="a/"' in deep.body
    assert s1.body != s2.body  # fresh session ids on every visit


def test_the_dns_server_answers_records_and_nxdomain(web: TestWeb) -> None:
    assert web.dns is not None

    async def body() -> None:
        resolver = Resolver([], AddressPolicy(), nameservers=[web.dns_address])
        with pytest.raises(IpPolicyError):
            await resolver.lookup("internal.chaos-dns.example")
        with pytest.raises(DnsError):
            await resolver.lookup("nothing-here.chaos-dns.example")
        await resolver.close()

    asyncio.run(body())
    assert web.dns.asked["internal.chaos-dns.example"] >= 1
    assert "--nameservers" in web.crawl_args()
