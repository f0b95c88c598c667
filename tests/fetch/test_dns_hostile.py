"""Names that must never be resolved for real, and DNS failures told apart by whether a retry can help."""

from __future__ import annotations

import socket

import pytest

from tests.fetch.dnsserver import serve_dns
from tests.fetch.servers import run
from webtrawl.config import Politeness
from webtrawl.errors import DnsError, DnsTimeout, IpPolicyError
from webtrawl.fetch.addrpolicy import AddressPolicy
from webtrawl.fetch.dns import Resolver
from webtrawl.politeness import outcome_for


@pytest.mark.parametrize("name", ["nowhere.invalid", "x.y.INVALID", "hidden.onion"])
def test_reserved_names_fail_without_a_query(name: str) -> None:
    async def body() -> None:
        async with serve_dns({name.lower(): ["1.2.3.4"]}) as (ns, server):
            resolver = Resolver([], AddressPolicy(), nameservers=[ns])
            with pytest.raises(DnsError) as info:
                await resolver.lookup(name)
            assert not isinstance(info.value, DnsTimeout)
            await resolver.close()
            assert server.asked == {}  # no packet, not even to our own server

    run(body())


def test_localhost_names_are_loopback_and_the_policy_decides() -> None:
    async def body() -> None:
        resolver = Resolver([], AddressPolicy(), nameservers=["127.0.0.1:9"])
        with pytest.raises(IpPolicyError):
            await resolver.lookup("db.localhost")
        allowed = Resolver([], AddressPolicy(["127.0.0.0/8"]), nameservers=["127.0.0.1:9"])
        assert await allowed.lookup("localhost") == ["127.0.0.1"]
        await resolver.close()
        await allowed.close()

    run(body())


def test_a_name_resolving_to_a_private_address_is_refused() -> None:
    async def body() -> None:
        async with serve_dns({"evil.example": ["10.1.2.3"], "meta.example": ["169.254.169.254"]}) as (ns, _):
            resolver = Resolver([], AddressPolicy(), nameservers=[ns])
            for name in ("evil.example", "meta.example"):
                with pytest.raises(IpPolicyError):
                    await resolver.lookup(name)
            await resolver.close()

    run(body())


def test_no_answer_is_a_transient_dns_timeout_but_nxdomain_is_final() -> None:
    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # takes queries, never answers
    silent.bind(("127.0.0.1", 0))
    try:

        async def body() -> None:
            resolver = Resolver([], AddressPolicy(), nameservers=[f"127.0.0.1:{silent.getsockname()[1]}"], timeout=0.2)
            with pytest.raises(DnsTimeout) as info:
                await resolver.lookup("slow.example")
            assert info.value.reason == "dns-timeout" and info.value.transient
            await resolver.close()

        run(body())
    finally:
        silent.close()
    pol = Politeness()
    assert outcome_for(None, "dns-timeout", [], pol, None).retry
    assert not outcome_for(None, "dns", [], pol, None).retry
