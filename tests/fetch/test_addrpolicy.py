"""The SSRF guard: which addresses and ports a crawl may reach, including odd spellings of IP literals."""

from __future__ import annotations

import pytest

from webtrawl.errors import ConfigError, IpPolicyError, PortPolicyError
from webtrawl.fetch import AddressPolicy
from webtrawl.fetch.addrpolicy import parse_ip_literal

REFUSED_BY_DEFAULT = [
    "127.0.0.1",
    "127.8.9.10",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.64.0.1",  # carrier-grade NAT
    "0.0.0.0",
    "224.0.0.1",  # multicast, which Python calls global
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "ff02::1",
    "::ffff:127.0.0.1",  # IPv4-mapped loopback
    "::ffff:10.0.0.1",
    "2002:7f00:1::1",  # 6to4 wrapping 127.0.0.1
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
]


@pytest.mark.parametrize("ip", REFUSED_BY_DEFAULT)
def test_default_policy_refuses_non_public_addresses(ip: str) -> None:
    with pytest.raises(IpPolicyError):
        AddressPolicy([], []).check_ip(ip)


@pytest.mark.parametrize("ip", ["93.184.215.14", "8.8.8.8", "2606:4700::1111", "::ffff:8.8.8.8"])
def test_default_policy_allows_public_unicast(ip: str) -> None:
    AddressPolicy([], []).check_ip(ip)


def test_ip_allow_admits_exactly_the_listed_networks() -> None:
    policy = AddressPolicy(["127.0.0.0/8"], [])
    policy.check_ip("127.0.0.1")
    policy.check_ip("127.1.2.3")
    policy.check_ip("::ffff:127.0.0.1")  # mapped form of an allowed v4 address
    for ip in ("8.8.8.8", "10.0.0.1", "::1", "128.0.0.1"):
        with pytest.raises(IpPolicyError):
            policy.check_ip(ip)


def test_ip_allow_rejects_a_bad_network() -> None:
    with pytest.raises(ConfigError):
        AddressPolicy(["127.0.0.0/33"], [])


@pytest.mark.parametrize("port", [22, 25, 6667, 10080, 0, 65536])
def test_bad_ports_refused_by_default(port: int) -> None:
    with pytest.raises(PortPolicyError):
        AddressPolicy([], []).check_port(port)


@pytest.mark.parametrize("port", [80, 443, 8080, 8443, 3000])
def test_ordinary_ports_allowed_by_default(port: int) -> None:
    AddressPolicy([], []).check_port(port)


def test_explicit_port_list_replaces_the_default() -> None:
    policy = AddressPolicy([], [80, 25])
    policy.check_port(80)
    policy.check_port(25)  # listed on purpose, so allowed even though browsers block it
    with pytest.raises(PortPolicyError):
        policy.check_port(443)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", "127.0.0.1"),
        ("2130706433", "127.0.0.1"),  # one decimal number
        ("0177.0.0.1", "127.0.0.1"),  # octal part
        ("0x7f.1", "127.0.0.1"),  # hex part, last part fills three bytes
        ("0X7F000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"),
        ("10.0.0.1.", "10.0.0.1"),  # trailing dot
        ("[::1]", "::1"),
        ("[::ffff:127.0.0.1]", "::ffff:7f00:1"),
        ("[fe80::1%eth0]", "fe80::1"),
        ("example.com", None),
        ("1.2.3.4.5", None),  # five parts: a name, not an address
        ("256.1.1.1", None),  # out of range: not an address
        ("0x", "0.0.0.0"),
        ("cafe.example", None),
        ("1e3", None),
    ],
)
def test_ip_literal_spellings(host: str, expected: str | None) -> None:
    parsed = parse_ip_literal(host)
    assert (str(parsed) if parsed is not None else None) == expected


@pytest.mark.parametrize(
    ("host", "port", "reason"),
    [
        ("example.com", 80, None),
        ("example.com", 22, "port-policy"),
        ("93.184.215.14", 443, None),
        ("127.0.0.1", 80, "ip-policy"),
        ("2130706433", 80, "ip-policy"),
        ("0177.0.0.1", 80, "ip-policy"),
        ("0x7f.1", 80, "ip-policy"),
        ("127.1", 80, "ip-policy"),
        ("[::1]", 80, "ip-policy"),
        ("[::ffff:127.0.0.1]", 80, "ip-policy"),
        ("[::ffff:7f00:1]", 80, "ip-policy"),
        ("169.254.169.254", 80, "ip-policy"),
        ("127.0.0.1", 25, "port-policy"),  # port is checked first
        ("localhost", 80, None),  # a name: judged after DNS, not here
    ],
)
def test_url_allowed_default_policy(host: str, port: int, reason: str | None) -> None:
    assert AddressPolicy([], []).url_allowed(host, port) == reason


def test_url_allowed_with_ip_allow() -> None:
    policy = AddressPolicy(["127.0.0.0/8"], [8080])
    assert policy.url_allowed("0x7f.1", 8080) is None
    assert policy.url_allowed("127.0.0.1", 80) == "port-policy"
    assert policy.url_allowed("8.8.8.8", 8080) == "ip-policy"
