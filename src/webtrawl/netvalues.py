"""How the network options' values are read and checked: ports, addresses, networks, host patterns, DNS pins and
servers, CA files, proxy and Redis URLs (the rest, and the rules every reader follows: values.py)."""

from __future__ import annotations

import ipaddress
import re
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from webtrawl.redact import mask_password
from webtrawl.values import path, whole

_LABEL_RE = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$", re.IGNORECASE)


def port(text: Any) -> int:
    """A TCP port to listen on; 0: off."""
    value = whole(text)
    if not 0 <= value < 65536:
        raise ValueError(f"not a port (0-65535): {text!r}")
    return value


def ports(text: str | int | list[Any]) -> list[int]:
    items = text if isinstance(text, list) else str(text).split(",")
    out = []
    for item in items:
        try:
            value = whole(item)
        except ValueError:
            value = 0
        if not 0 < value < 65536:
            raise ValueError(f"not a port (1-65535): {item!r}")
        out.append(value)
    return out


def ip_address(text: Any) -> str:
    try:
        return str(ipaddress.ip_address(str(text).strip().strip("[]")))
    except ValueError:
        raise ValueError(f"not an IP address: {text!r}") from None


def network(text: Any) -> str:
    """A CIDR network (``10.0.0.0/8``, ``::1/128``) or one address; host bits may be set."""
    try:
        ipaddress.ip_network(str(text).strip(), strict=False)
    except ValueError:
        raise ValueError(f"not a network like 10.0.0.0/8: {text!r}") from None
    return str(text).strip()


def host_pattern(text: Any) -> str:
    """A host name, ``*.suffix`` or ``*`` (an IP literal is a host name too)."""
    value = str(text).strip().lower().rstrip(".")
    name = value[2:] if value.startswith("*.") else value
    if value == "*" or _is_host(name):
        return value
    raise ValueError(f"not a host name: {text!r}")


def _is_host(name: str) -> bool:
    if not name:
        return False
    try:
        ipaddress.ip_address(name.strip("[]"))
        return True
    except ValueError:
        pass
    return len(name) <= 253 and all(_LABEL_RE.match(label) for label in name.split("."))


def resolve_pin(text: Any) -> str:
    """``HOST=IP[,IP]``, ``*.suffix=IP`` or ``*=IP``."""
    item = str(text)
    host, sep, ips = item.partition("=")
    if not sep or not host.strip() or not ips.strip():
        raise ValueError(f"wants HOST=IP, not {item!r}")
    host_pattern(host)
    for ip in ips.split(","):
        if ip.strip():
            try:
                ip_address(ip)
            except ValueError:
                raise ValueError(f"not an IP address: {ip.strip()!r} in {item!r}") from None
    return item


def nameserver(text: Any) -> str:
    """``IP``, ``IPv4:PORT`` or ``[IPv6]:PORT``."""
    value = str(text).strip()
    try:
        ipaddress.ip_address(value)
        return value
    except ValueError:
        pass
    host, sep, port_text = value.rpartition(":")
    try:
        ipaddress.ip_address(host.strip("[]"))
        if sep and whole(port_text) in range(1, 65536):
            return value
    except ValueError:
        pass
    raise ValueError(f"wants IP or IP:PORT, not {text!r}")


def ca_file(text: Any) -> Path:
    """A readable PEM file with at least one certificate (what the fetchers' TLS context loads)."""
    file = path(text)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        ctx.load_verify_locations(cafile=str(file))
    except ssl.SSLError:  # an OSError too: first
        raise ValueError(f"no PEM certificate in {str(file)!r}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {str(file)!r}: {exc.strerror or exc}") from None
    if not ctx.cert_store_stats()["x509"]:
        raise ValueError(f"no PEM certificate in {str(file)!r}")
    return file


def proxy(text: Any) -> str:
    """``http://HOST:PORT`` or ``https://...``: a host, no path."""
    url = str(text)
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number or out of range
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
        raise ValueError(f"wants http://HOST:PORT (or https://), not {mask_password(url)!r}")
    return url


def redis_url(text: Any) -> str:
    url = str(text)
    if not url.lower().startswith(("redis://", "rediss://", "unix://", "redis+sentinel://")):
        raise ValueError(f"wants a redis://, rediss://, unix:// or redis+sentinel:// URL, not {mask_password(url)!r}")
    try:  # its port (a sentinel URL names several host:port); the URL is not quoted: it may hold a password
        _ = urlsplit(url).port if url.lower().startswith(("redis://", "rediss://")) else None
    except ValueError as exc:
        raise ValueError(f"not a Redis URL: {exc}") from None
    return url


def bind_address(text: Any) -> str:
    value = str(text).strip()
    if value in ("", "*") or _is_host(value):
        return value
    raise ValueError(f"not an address or host name to listen on: {text!r}")
