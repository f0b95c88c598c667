"""How each kind of option value is read and checked: sizes, durations, numbers, ports, networks, DNS pins, CA files,
regexes... Every reader takes the raw text (or a TOML value) and returns the typed value, or raises ``ValueError``
with a short message that quotes the value and never names the option: :func:`webtrawl.config.load` adds the option's
name once, so a bad value gives one line like ``--max-pages: not a whole number: 'abc'``.

All of this runs in :func:`~webtrawl.config.load`, before any process starts: a value a fetcher or parser would
choke on must be refused here, or the child dies at start again after every restart.
"""

from __future__ import annotations

import ipaddress
import math
import re
import ssl
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from webtrawl.errors import ConfigError

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_DURATION_MULT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_WHOLE_RE = re.compile(r"^\s*[-+]?\d+\s*$")
_NODE_ID_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # no '/' or space: lease owners are "<node id>/f<index>"
_LABEL_RE = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$", re.IGNORECASE)
BODY_CAP = 192 * 1024 * 1024
"""The largest --max-body: a page reaches its parser in one frame (``pagepipe``), whose limit leaves room beside it."""
WHOLE_MAX = 2**53 - 1
"""The largest count or size: exact in a Redis script's (Lua) numbers, and it fits the shared 64-bit counters; a
larger one wrapped around (--max-pages 10**20 stopped the crawl at once) or was not a number at all."""
SECONDS_MAX = 1e9
"""The largest number of seconds (about 31 years), and of any other decimal option: Python cannot wait much longer
(``threading.TIMEOUT_MAX``), and milliseconds of it stay exact (--delay 1e308 was infinite in ms)."""


def parse_size(text: str | int) -> int:
    """``10MiB``, ``10M``, ``500k`` or a plain byte count."""
    if isinstance(text, int) and not isinstance(text, bool):
        return non_negative_int(text)
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 10MiB, 500k or 1048576)")
    size = float(m.group(1)) * _SIZE_MULT[m.group(2).lower()]
    if size > WHOLE_MAX:
        raise ValueError(f"too large: {text!r} (at most {WHOLE_MAX} bytes)")
    return int(size)


def parse_body_size(text: str | int) -> int:
    """:func:`parse_size`, at most :data:`BODY_CAP`: a larger body could not reach a parser, and its page would be
    fetched again and again."""
    size = parse_size(text)
    if size > BODY_CAP:
        raise ValueError(f"at most {BODY_CAP // 1024**2}MiB (a page goes to its parser in one piece), not {text!r}")
    return size


def parse_duration(text: str | float) -> float:
    """``90``, ``90s``, ``15m``, ``6h`` or ``1d`` in seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return non_negative_float(text)
    m = _DURATION_RE.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 1d, 6h, 90m or 3600)")
    return _not_too_large(float(m.group(1)) * _DURATION_MULT[m.group(2).lower()], text)


def text_only(value: Any) -> Any:
    """Bytes are no option's value: read as their text is, b'MyBot/1' was the User-Agent "b'MyBot/1'"."""
    if isinstance(value, bytes | bytearray):
        raise TypeError(f"bytes, not text: {value!r}")
    return value


def parse_bool(text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    low = str(text).strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r} (use true or false)")


def _whole(text: Any) -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    elif isinstance(text, str) and _WHOLE_RE.match(text):
        value = int(text)
    else:
        raise ValueError(f"not a whole number: {text!r}")
    if abs(value) > WHOLE_MAX:
        raise ValueError(f"too large: {text!r} (at most {WHOLE_MAX})")
    return value


def non_negative_int(text: Any) -> int:
    value = _whole(text)
    if value < 0:
        raise ValueError(f"must be 0 or more, not {value}")
    return value


def count_or_auto(text: Any) -> int:
    """A count, or ``auto`` (-1): decided later from what is there (--redis-replicas: the replicas Redis has)."""
    if str(text).strip().lower() in ("auto", "-1"):  # -1: how a saved config (crawl.json) holds auto
        return -1
    return non_negative_int(text)


def at_least_one(text: Any) -> int:
    value = _whole(text)
    if value < 1:
        raise ValueError(f"must be 1 or more, not {value}")
    return value


def non_negative_float(text: Any) -> float:
    if isinstance(text, bool) or not isinstance(text, int | float | str):
        raise ValueError(f"not a number: {text!r}")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {text!r}")
    if value < 0:
        raise ValueError(f"must be 0 or more, not {text!r}")
    return _not_too_large(value, text)


def _not_too_large(value: float, text: Any) -> float:
    if value > SECONDS_MAX:
        raise ValueError(f"too large: {text!r} (at most {SECONDS_MAX:.0f})")
    return value


def probability(text: Any) -> float:
    """A false-positive rate: above 0 and below 0.5 (a filter that wrong would drop most new URLs)."""
    value = non_negative_float(text)
    if not 0.0 < value < 0.5:
        raise ValueError(f"must be above 0 and below 0.5, not {text!r}")
    return value


def shard_count(text: Any) -> int:
    value = _whole(text)
    if not 1 <= value <= 16384:
        raise ValueError(f"must be between 1 and 16384, not {value}")
    return value


def port(text: Any) -> int:
    """A TCP port to listen on; 0: off."""
    value = _whole(text)
    if not 0 <= value < 65536:
        raise ValueError(f"not a port (0-65535): {text!r}")
    return value


def ports(text: str | int | list[Any]) -> list[int]:
    items = text if isinstance(text, list) else str(text).split(",")
    out = []
    for item in items:
        try:
            value = _whole(item)
        except ValueError:
            value = 0
        if not 0 < value < 65536:
            raise ValueError(f"not a port (1-65535): {item!r}")
        out.append(value)
    return out


def choice(*allowed: str) -> Callable[[Any], str]:
    def parse(text: Any) -> str:
        if str(text) not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, not {text!r}")
        return str(text)

    return parse


def path(text: Any) -> Path:
    if not str(text).strip():
        raise ValueError("an empty path")
    return Path(str(text)).expanduser()


def regex(text: Any) -> str:
    try:
        re.compile(str(text))
    except re.error as exc:
        raise ValueError(f"bad regex {text!r}: {exc}") from None
    return str(text)


def css_selector(text: Any) -> str:
    """A CSS selector of elements (no pseudo-element), as lxml runs it (cssselect comes with parsel)."""
    from cssselect import HTMLTranslator, SelectorError

    try:
        HTMLTranslator().css_to_xpath(str(text))
    except SelectorError as exc:
        raise ValueError(f"bad CSS selector {text!r}: {exc}") from None
    return str(text)


def node_id(text: Any) -> str:
    if not _NODE_ID_RE.fullmatch(str(text)):
        raise ValueError(f"must be letters, digits, '.', '_' or '-' (at most 64), not {text!r}")
    return str(text)


def one_line(text: Any) -> str:
    """Text sent in a request header (the User-Agent): printable, one line, not empty."""
    value = str(text)
    if not value.strip() or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ValueError(f"must be one printable line, not {value!r}")
    return value


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
        if sep and _whole(port_text) in range(1, 65536):
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
        raise ValueError(f"wants http://HOST:PORT (or https://), not {url!r}")
    return url


def redis_url(text: Any) -> str:
    url = str(text)
    if not url.lower().startswith(("redis://", "rediss://", "unix://", "redis+sentinel://")):
        raise ValueError(f"wants a redis://, rediss://, unix:// or redis+sentinel:// URL, not {url!r}")
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


def header(text: Any) -> str:
    header_pair(str(text))
    return str(text)


def spider_arg(text: Any) -> str:
    """``NAME=VALUE`` (``--spider-arg category=books``): an attribute of the spider, as Scrapy's ``-a`` sets."""
    name, sep, _ = str(text).partition("=")
    if not sep or not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"not NAME=VALUE (NAME a Python name, not private): {text!r}")
    return str(text)


def parse_headers(items: Iterable[str]) -> list[tuple[str, str]]:
    """``--header 'Name: value'`` items as pairs; ConfigError for anything that is not one header line (the
    fetchers' client and rules files' headers read them with this too)."""
    try:
        return [header_pair(item) for item in items]
    except ValueError as exc:
        raise ConfigError(f"--header: {exc}") from None


def header_pair(item: str) -> tuple[str, str]:
    """``Name: value`` as a pair; one header line, a token for a name."""
    name, sep, value = item.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not name or any(c in item for c in "\r\n") or not name.replace("-", "").isalnum():
        raise ValueError(f"wants 'Name: value', not {item!r}")
    if name.lower() == "user-agent":  # one agent per crawl: the one robots.txt is read for
        raise ValueError("set the User-Agent with --user-agent: robots.txt is obeyed for its product token")
    return name, value


def age_recipient(text: Any) -> str:
    """An age public key (``age1...``) or SSH public key, checked by pyrage."""
    from webtrawl.formats.agekey import check_recipient

    return check_recipient(str(text))


def sink_url(text: Any) -> str:
    """A sink URL, checked, with file paths made absolute (a resume from elsewhere writes to the same place)."""
    from webtrawl.formats.sinkurl import normalize

    return normalize(str(text))


def fetcher_name(text: Any) -> str:
    """A fetcher's name, by its form: http, browser, or ``package.module:Class[?k=v&...]`` (``trawl crawl`` imports
    it at start)."""
    from webtrawl.importpath import is_import_path

    name = str(text)
    if name not in ("http", "browser") and not is_import_path(name.partition("?")[0]):
        raise ValueError(f"want http, browser or package.module:Class, not {name!r}")
    return name
