"""The address policy under attack: every way a page, a redirect, DNS or a proxy can point the crawler at a refused
address, through the real fetch path against real loopback servers.

The crawl may reach only 127.0.0.2 (``--ip-allow 127.0.0.2/32``); the refused target listens on 127.0.0.1 and
[::1] on the same port and counts its requests (see :mod:`tests.fixtures.attack_web`). Each form must be refused
with the reason ``ip-policy`` before anything is sent, and the target must see no request at all.

No packet may leave 127.0.0.0/8 even if the code under test is broken: the client's sockets are opened through a
guard that refuses any peer off loopback (the test then fails with the wrong error instead of connecting), and the
crawl (a subprocess, without that guard) is given only the forms that land on loopback; the others (the metadata
address, NAT64, link-local) are covered by the client tests.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fetch.servers import local_cfg, run
from tests.fixtures.attack_web import ALLOWED_IP, AttackWeb
from tests.fixtures.connect_proxy import ConnectProxy
from tests.node.crawlrun import Crawl, records
from webtrawl.addrpolicy import AddressPolicy, parse_ip_literal
from webtrawl.errors import IpPolicyError
from webtrawl.fetch import client as client_module
from webtrawl.fetch.client import HttpClient
from webtrawl.fetch.dns import Resolver
from webtrawl.fetch.wire import open_socket
from webtrawl.formats import canonicalize

# (case, host as a page would write it): each reaches the refused server if the policy lets it through.
CASES = [
    ("decimal", "2130706433"),
    ("octal", "0177.0.0.1"),
    ("hex", "0x7f.1"),
    ("short", "127.1"),
    ("dotted", "127.0.0.1"),
    ("trailing-dot", "127.0.0.1."),
    ("percent-encoded", "127%2E0%2E0%2E1"),  # URL parsers decode the host first
    ("fullwidth", "\uff11\uff12\uff17.\uff10.\uff10.\uff11"),  # IDNA maps these digits to ASCII
    ("ideographic-dots", "127\u30020\u30020\u30021"),
    ("ipv4-mapped", "[::ffff:127.0.0.1]"),
    ("nat64", "[64:ff9b::7f00:1]"),
    ("unspecified", "0.0.0.0"),
    ("metadata", "169.254.169.254"),
    ("link-local", "[fe80::1]"),
    ("ipv6-loopback", "[::1]"),
    ("name", "evil.example"),
    ("cname-chain", "alias.example"),
]
IDS = [case for case, _ in CASES]


@pytest.fixture(scope="module")
def attack() -> Iterator[AttackWeb]:
    with AttackWeb() as web:
        yield web


@pytest.fixture(autouse=True)
def _nothing_reached_the_refused_server(attack: AttackWeb) -> Iterator[None]:
    before = len(attack.private_hits)
    yield
    assert attack.private_hits[before:] == [], "a request reached the refused address"


@pytest.fixture(autouse=True)
def _loopback_only_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    def guarded(addr_info: tuple[Any, ...]) -> socket.socket:
        if not _on_loopback(str(addr_info[4][0])):
            raise OSError(f"test guard: no connection to {addr_info[4][0]} (off loopback)")
        return open_socket(addr_info)

    monkeypatch.setattr(client_module, "open_socket", guarded)


def _on_loopback(host: str) -> bool:
    addr = parse_ip_literal(host)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr is not None and (addr.is_loopback or addr.is_unspecified)


# The forms a crawl subprocess may be given: they land on loopback (or are names answered by the test DNS server).
ON_LOOPBACK = [(case, host) for case, host in CASES if parse_ip_literal(host) is None or _on_loopback(host)]


def _client(web: AttackWeb, **options: Any) -> HttpClient:
    cfg = local_cfg(
        ip_allow=[f"{ALLOWED_IP}/32"], ports=[web.port], resolve=[], nameservers=[web.nameserver], **options
    )
    return HttpClient(cfg.fetch, cfg.limits)


@pytest.mark.parametrize(("case", "host"), CASES, ids=IDS)
def test_the_client_refuses_every_form_before_sending(attack: AttackWeb, case: str, host: str) -> None:
    async def body() -> None:
        async with _client(attack) as client:
            url = canonicalize(attack.url(host, f"/direct/{case}"))  # as the frontier hands it to the fetcher
            with pytest.raises(IpPolicyError) as info:
                await client.check_target(url)
            assert info.value.reason == "ip-policy"
            with pytest.raises(IpPolicyError):
                await client.fetch(url)

    run(body())


@pytest.mark.parametrize(("case", "host"), CASES, ids=IDS)
def test_a_proxy_does_not_carry_a_refused_target(attack: AttackWeb, case: str, host: str) -> None:
    """The proxy would connect for us: the client checks the target itself, and the proxy is never asked."""
    with ConnectProxy({attack.port}) as proxy:

        async def body() -> None:
            async with _client(attack, proxy=[proxy.url]) as client:
                with pytest.raises(IpPolicyError):
                    await client.fetch(canonicalize(attack.url(host, f"/proxied/{case}").replace("http:", "https:")))

        run(body())
        assert proxy.connects == [] and proxy.refused == []


def test_a_dns_answer_that_changes_after_the_check_is_checked_again_at_connect(attack: AttackWeb) -> None:
    """DNS rebinding: the first answer (allowed) passes the check; the connect asks again (a TTL of 0 here), gets
    the refused address and is refused. The address connected to is always one the policy saw."""

    async def body() -> None:
        policy = AddressPolicy([f"{ALLOWED_IP}/32"], [attack.port])
        resolver = Resolver([], policy, nameservers=[attack.nameserver], min_ttl=0.0)
        cfg = local_cfg(ip_allow=[f"{ALLOWED_IP}/32"], ports=[attack.port], resolve=[])
        attack.rebind_answers = 0
        async with HttpClient(cfg.fetch, cfg.limits, resolver=resolver) as client:
            url = attack.url("rebind.example", "/rebound")
            await client.check_target(url)  # first answer: 127.0.0.2, allowed
            with pytest.raises(IpPolicyError):
                await client.fetch(url)  # asked again at connect: 127.0.0.1
        assert attack.rebind_answers >= 2

    run(body())


def test_a_crawl_records_every_refused_form_with_its_reason(tmp_path: Path) -> None:
    """A real ``trawl crawl``: each form as a seed, as a link of an allowed page and as a redirect's target; each
    ends as a record failed with ``ip-policy`` or a dropped link with that reason. A rebinding name is fetched
    from the address that was checked (the resolver hands aiohttp exactly the addresses it judged)."""
    links = "".join(f'<a href="http://{host}:{{port}}/link/{case}">{case}</a>' for case, host in ON_LOOPBACK)
    with AttackWeb() as web:
        web.pages["/"] = "<html><body>" + links.replace("{port}", str(web.port)) + "</body></html>"
        for case, host in ON_LOOPBACK:
            web.redirects[f"/go/{case}"] = web.url(host, f"/redirect/{case}")
        redirects = "".join(f'<a href="/go/{case}">go</a>' for case, _ in ON_LOOPBACK)
        web.pages["/"] = web.pages["/"].replace("</body>", redirects + "</body>")
        seeds = [web.url("site.example"), web.url("rebind.example", "/rebound")]
        seeds += [web.url(host, f"/seed/{case}") for case, host in ON_LOOPBACK]
        out = tmp_path / "out"
        args = [*seeds, *web.crawl_args(), "--delay", "0", "--fetchers", "1", "--parsers", "1", "--max-retries", "0"]
        crawl = Crawl(out, args)
        assert crawl.wait(120) == 0, crawl.log()
        assert web.private_hits == [], web.private_hits
        allowed_hits = list(web.allowed_hits)

    rows = {row["url"]: row for row in records(out)}
    dropped = {row["url"]: row["reason"] for path in (out / "dropped").glob("*.jsonl*") for row in _jsonl(path)}
    for case, host in ON_LOOPBACK:
        for kind in ("seed", "link", "redirect"):
            url = canonicalize(f"http://{host}:{web.port}/{kind}/{case}")
            reason = rows[url].get("error") if url in rows else dropped.get(url)
            assert reason == "ip-policy", (case, kind, url, rows.get(url), dropped.get(url))
        assert rows[canonicalize(web.url("site.example", f"/go/{case}"))]["status"] == 302
    rebound = rows[canonicalize(web.url("rebind.example", "/rebound"))]
    assert rebound["status"] == 200 and rebound.get("ip") in (None, ALLOWED_IP), rebound
    assert f"rebind.example:{web.port} /rebound" in allowed_hits


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
