"""The address policy lives in :mod:`webtrawl.addrpolicy` (the parser's link pre-check uses it too, and the parse
stage must not import the fetch stage); this name stays for the fetcher's modules and their tests."""

from webtrawl.addrpolicy import BAD_PORTS, AddressPolicy, IPAddress, IPNetwork, parse_ip_literal

__all__ = ["BAD_PORTS", "AddressPolicy", "IPAddress", "IPNetwork", "parse_ip_literal"]
