"""How each kind of option value is read and checked: sizes, durations, numbers, regexes, headers... (ports, networks,
DNS pins, proxies, CA files: netvalues.py). Every reader takes the raw text (or a TOML value) and returns the typed
value, or raises ``ValueError`` with a short message that quotes the value and never names the option:
:func:`webtrawl.config.load` adds the option's name once: ``--max-pages: not a whole number: 'abc'``.

All of this runs in :func:`~webtrawl.config.load`, before any process starts: a value a fetcher or parser would
choke on must be refused here, or the child dies at start again after every restart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from webtrawl.errors import ConfigError

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)
_SIZE_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$", re.IGNORECASE)
_DURATION_MULT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_WHOLE_RE = re.compile(r"^\s*[-+]?\d+\s*$")
_NODE_ID_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # no '/' or space: lease owners are "<node id>/f<index>"
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


def whole(text: Any) -> int:
    """A whole number, given as one or as its text, at most WHOLE_MAX either way."""
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
    value = whole(text)
    if value < 0:
        raise ValueError(f"must be 0 or more, not {value}")
    return value


def count_or_auto(text: Any) -> int:
    """A count, or ``auto`` (-1): decided later from what is there (--redis-replicas: the replicas Redis has)."""
    if str(text).strip().lower() in ("auto", "-1"):  # -1: how a saved config (crawl.json) holds auto
        return -1
    return non_negative_int(text)


def at_least_one(text: Any) -> int:
    value = whole(text)
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


def share(text: Any) -> float:
    """A share of a whole, 0 to 1 (an error rate: a share above 1 could never be reached)."""
    value = non_negative_float(text)
    if value > 1:
        raise ValueError(f"a share is 0 to 1 (0.1 for 10%), not {text!r}")
    return value


MAX_PROCESSES = 1024
"""The most fetcher (or parser) processes a node starts: more than the largest machines' cores, fewer than would
exhaust a system's process table while they start (--fetchers 100000 ran on without a word)."""


def process_count(text: Any) -> int:
    value = non_negative_int(text)
    if value > MAX_PROCESSES:
        raise ValueError(f"at most {MAX_PROCESSES} processes, not {value} (0: one per core)")
    return value


def shard_count(text: Any) -> int:
    value = whole(text)
    if not 1 <= value <= 16384:
        raise ValueError(f"must be between 1 and 16384, not {value}")
    return value


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


_HEADER_NAME_RE = re.compile(r"\s*[A-Za-z0-9-]*")


def header_pair(item: str) -> tuple[str, str]:
    """``Name: value`` as a pair; one header line, a token for a name."""
    name, sep, value = item.partition(":")
    name, value = name.strip(), value.strip()
    if not sep or not name or any(c in item for c in "\r\n") or not name.replace("-", "").isalnum():
        # its name only: the rest may be a token ('Authorization Bearer ...' without its colon)
        shown = found.group() if (found := _HEADER_NAME_RE.match(item)) else ""
        raise ValueError(f"wants one line 'Name: value', not {shown + '...'!r} (the rest is not repeated)")
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


_COMMA_TEXT: frozenset[Callable[[Any], str]] = frozenset({regex, css_selector, header, spider_arg})


def env_list(reader: Callable[[Any], Any], text: str) -> list[str]:
    """The values of a repeatable option's ``TRAWL_*`` variable: one a line; a comma separates them too, except for
    values that may hold one (a regex's ``{1,3}``, a header's ``text/html, */*``, a selector list, a spider
    argument's text), which are taken whole."""
    parts = text.splitlines() if "\n" in text or reader in _COMMA_TEXT else text.split(",")
    return [part for part in parts if part.strip()]


_COMPATIBLE_RE = re.compile(r"\(compatible;\s*([A-Za-z_-][^/;)\s]*)")


def product_of(user_agent: str) -> str:
    """The robots.txt product token of a User-Agent (RFC 9309 2.2.1): its first word without its version, or in a
    browser-like one written as Googlebot and bingbot write theirs, ``Mozilla/5.0 (compatible; MyBot/1.0; +URL)``,
    the product after ``compatible;`` (``MyBot``: its token was ``Mozilla``, which no site names, so the rules a
    site wrote for MyBot did not apply)."""
    first = user_agent.split(None, 1)[0] if user_agent.strip() else "webtrawl"
    found = _COMPATIBLE_RE.search(user_agent) if first.lower().startswith("mozilla/") else None
    return found.group(1) if found else first.split("/", 1)[0]
