"""Which addresses and ports the crawler may connect to: the SSRF guard.

A crawler follows links written by strangers, so a page can point it at ``http://127.0.0.1:6379/`` or at a
cloud metadata address. By default only public unicast addresses and ports that browsers also allow are
reachable; ``--ip-allow`` replaces the address rule with an explicit list of networks (e.g. ``127.0.0.0/8``
for a local test web). The check runs on every resolved address (see :mod:`webtrawl.fetch.dns`) and, cheaply
and without DNS, on IP literals in URLs, including the legacy spellings (``2130706433``, ``0177.0.0.1``,
``0x7f.1``, ``127.1``) that ``inet_aton`` and many HTTP stacks still accept.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from webtrawl.errors import ConfigError, IpPolicyError, PortPolicyError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# The Fetch standard's "bad port" list (https://fetch.spec.whatwg.org/#port-blocking): ports of text protocols
# that a request could be smuggled into. Port 0 is not a port at all.
BAD_PORTS: frozenset[int] = frozenset(
    {
        0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102,
        103, 104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512,
        513, 514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719,
        1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697,
        10080,
    }
)  # fmt: skip

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


def parse_ip_literal(host: str) -> IPAddress | None:
    """The address a URL host denotes if it is an IP literal in any accepted spelling, else None.

    IPv4 follows the WHATWG URL host parser: 1 to 4 dot-separated parts, each decimal, octal (leading ``0``)
    or hex (``0x``); the last part fills the remaining bytes. IPv6 may be bracketed and carry a zone id.
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        try:
            return ipaddress.IPv6Address(text.split("%", 1)[0])
        except ValueError:
            return None
    return _parse_ipv4(text)


def _parse_ipv4(text: str) -> ipaddress.IPv4Address | None:
    parts = text.split(".")
    if parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()  # one trailing dot is allowed
    if not 1 <= len(parts) <= 4:
        return None
    numbers: list[int] = []
    for part in parts:
        number = _parse_ipv4_number(part)
        if number is None:
            return None
        numbers.append(number)
    last = numbers.pop()
    if any(n > 255 for n in numbers) or last >= 256 ** (4 - len(numbers)):
        return None
    value = last
    for i, n in enumerate(numbers):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _parse_ipv4_number(part: str) -> int | None:
    if not part:
        return None
    base = 10
    if part[:2].lower() == "0x":
        base, part = 16, part[2:]
        if not part:
            return 0
    elif len(part) > 1 and part[0] == "0":
        base, part = 8, part[1:]
    elif not (part.isascii() and part.isdigit()):  # not decimal, as host name labels: no int() to fail (~1.5 us)
        return None
    try:
        return int(part, base) if part.isascii() and part.isalnum() else None
    except ValueError:
        return None


def _tunnelled_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a 6to4 or NAT64 address forwards to: it must be public too."""
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def _is_public(ip: IPAddress) -> bool:
    return ip.is_global and not (
        ip.is_multicast or ip.is_reserved or ip.is_link_local or ip.is_loopback or ip.is_private or ip.is_unspecified
    )


_MAX_VERDICTS = 65536


class AddressPolicy:
    """Allowed peer addresses and ports of one crawl."""

    def __init__(self, ip_allow: Iterable[str] = (), ports: Iterable[int] = ()) -> None:
        self._networks: tuple[IPNetwork, ...] = tuple(_network(item) for item in ip_allow)
        self._ports: frozenset[int] = frozenset(ports)
        # Verdicts by address: ipaddress's checks cost microseconds each (is_private scans a table of networks)
        # and a crawl meets the same addresses again and again (shared hosting, CDNs, every new connection).
        self._verdicts: dict[str | IPAddress, bool] = {}

    def ip_allowed(self, ip: str | IPAddress) -> bool:
        verdict = self._verdicts.get(ip)
        if verdict is None:
            if len(self._verdicts) >= _MAX_VERDICTS:
                self._verdicts.clear()
            verdict = self._verdicts[ip] = self._ip_allowed(ip)
        return verdict

    def _ip_allowed(self, ip: str | IPAddress) -> bool:
        addr = parse_ip_literal(ip) if isinstance(ip, str) else ip
        if addr is None:
            return False
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped  # a mapped address *is* the v4 address
        if self._networks:
            return any(addr.version == net.version and addr in net for net in self._networks)
        if isinstance(addr, ipaddress.IPv6Address):
            embedded = _tunnelled_v4(addr)
            if embedded is not None and not _is_public(embedded):
                return False
        return _is_public(addr)

    def port_allowed(self, port: int) -> bool:
        if not 0 < port < 65536:
            return False
        if self._ports:
            return port in self._ports
        return port not in BAD_PORTS

    def check_ip(self, ip: str) -> None:
        if not self.ip_allowed(ip):
            raise IpPolicyError(f"address {ip} is not allowed")

    def check_port(self, port: int) -> None:
        if not self.port_allowed(port):
            raise PortPolicyError(f"port {port} is not allowed")

    def url_allowed(self, host: str, port: int) -> str | None:
        """Cheap pre-check for URL parsers (no DNS): the drop reason, or None if the URL may go on."""
        if not self.port_allowed(port):
            return PortPolicyError.reason
        addr = parse_ip_literal(host)
        if addr is not None and not self.ip_allowed(addr):
            return IpPolicyError.reason
        return None


def _network(text: str) -> IPNetwork:
    try:
        return ipaddress.ip_network(text.strip(), strict=False)
    except ValueError:
        raise ConfigError(f"--ip-allow wants a network like 10.0.0.0/8, not {text!r}") from None
