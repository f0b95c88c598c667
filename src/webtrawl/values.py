"""How the text of an option (a flag, a TOML value, a ``TRAWL_*`` variable) is read: sizes, durations, booleans,
ports, choices, paths, headers, proxy and sink URLs. Each reader raises ValueError (or ConfigError) with a message
that :mod:`webtrawl.config` prefixes with the option's name."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from webtrawl.errors import ConfigError

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str | int) -> int:
    """``10MiB``, ``10M``, ``500k`` or a plain byte count."""
    if isinstance(text, int):
        return text
    m = _SIZE_RE.match(str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (use e.g. 10MiB, 500k or 1048576)")
    return int(float(m.group(1)) * _SIZE_MULT[m.group(2).lower()])


_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_DURATION_MULT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str | float) -> float:
    """``90``, ``90s``, ``15m``, ``6h`` or ``1d`` in seconds."""
    if isinstance(text, int | float):
        if text < 0:
            raise ValueError(f"must be >= 0, not {text}")
        return float(text)
    m = _DURATION_RE.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 1d, 6h, 90m or 3600)")
    return float(m.group(1)) * _DURATION_MULT[m.group(2).lower()]


def parse_bool(text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    low = str(text).strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def parse_ports(text: str | int | list[Any]) -> list[int]:
    items = text if isinstance(text, list) else str(text).split(",")
    ports = []
    for item in items:
        port = int(str(item).strip())
        if not 0 < port < 65536:
            raise ValueError(f"port out of range: {port}")
        ports.append(port)
    return ports


def choice(*allowed: str) -> Callable[[Any], str]:
    def parse(text: Any) -> str:
        if str(text) not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, not {text!r}")
        return str(text)

    return parse


def positive_int(text: Any) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"must be >= 0, not {value}")
    return value


def positive_float(text: Any) -> float:
    value = float(text)
    if value < 0:
        raise ValueError(f"must be >= 0, not {value}")
    return value


def parse_path(text: Any) -> Path:
    return Path(str(text)).expanduser()


def parse_headers(items: Iterable[str]) -> list[tuple[str, str]]:
    """``--header 'Name: value'`` items as pairs; ConfigError for anything that is not one header line."""
    out = []
    for item in items:
        name, sep, value = item.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name or any(c in item for c in "\r\n") or not name.replace("-", "").isalnum():
            raise ConfigError(f"--header wants 'Name: value', not {item!r}")
        out.append((name, value))
    return out


def proxy_url(text: Any) -> str:
    from webtrawl.fetch.proxies import check_proxy

    return check_proxy(str(text))


def sink_url(text: Any) -> str:
    """A sink URL, checked, with file paths made absolute (a resume from elsewhere writes to the same place)."""
    from webtrawl.store.sinkurl import normalize

    return normalize(str(text))


def fetcher_name(text: Any) -> str:
    """A fetcher's name, by its form: http, browser, or ``package.module:Class[?k=v&...]`` (``trawl crawl`` imports
    it at start)."""
    from webtrawl.importpath import is_import_path

    name = str(text)
    if name not in ("http", "browser") and not is_import_path(name.partition("?")[0]):
        raise ValueError(f"want http, browser or package.module:Class, not {name!r}")
    return name
