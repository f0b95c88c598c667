"""One typed configuration object, filled in layers: defaults < TOML file < ``TRAWL_*`` env < command-line flags.

Every option is declared once in :data:`OPTIONS` (name, type, default, help); the argparse flags, the TOML keys and
the environment variable names are all derived from that table, so the four layers cannot drift apart. Options that
belong together are grouped into small frozen value objects (:class:`Timeouts`, :class:`Limits`, :class:`Politeness`)
that the stages take instead of the whole config.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webtrawl import __version__
from webtrawl.errors import ConfigError

DEFAULT_USER_AGENT = f"webtrawl/{__version__} (+https://github.com/webtrawl/webtrawl)"


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float = 10.0
    total: float = 60.0
    robots: float = 20.0


@dataclass(frozen=True, slots=True)
class Limits:
    max_body: int = 10 * 1024 * 1024
    max_decompressed: int = 50 * 1024 * 1024
    max_robots: int = 500 * 1024
    robots_cache: int = 64 * 1024 * 1024  # compiled robots.txt rules a fetcher keeps (a ~600 KB file: ~1.8 MiB)
    max_url_length: int = 2048
    max_query_variants: int = 100
    max_path_repeats: int = 3
    max_redirects: int = 5
    max_depth: int = 50
    host_queue_cap: int = 200_000
    host_budget: int = 100_000
    frontier_cap: int = 100_000_000


@dataclass(frozen=True, slots=True)
class Politeness:
    delay: float = 1.0
    max_crawl_delay: float = 30.0
    backoff_base: float = 5.0
    backoff_max: float = 3600.0
    max_retries: int = 2
    park_after: int = 8
    robots_ttl: float = 86400.0
    robots_retry: float = 60.0
    robots_give_up: int = 5
    honor_nofollow: bool = True
    honor_noindex: bool = True
    adaptive_delay: float = 0.0  # gap = max(delay, adaptive_delay x response time); 0: off
    delay_jitter: float = 0.0  # each gap is lengthened by a random share of up to this fraction
    slow_down_403: bool = False  # a 403 counts as a host failure (back-off) like a 429


@dataclass(slots=True)
class CrawlConfig:
    seeds: list[str] = field(default_factory=list)
    seeds_file: Path | None = None
    out: Path | None = None
    redis: str | None = None
    cluster: bool = False
    node_id: str = "local"
    keep_running: bool = False
    max_pages: int = 0
    max_time: float = 0.0
    fetchers: int = 0
    parsers: int = 0
    concurrency: int = 128
    lease_batch: int = 32
    session_pages: int = 50
    idle_connections: int = 128
    user_agent: str = DEFAULT_USER_AGENT
    scope: str = "any"
    sitemaps: str = "auto"
    sitemap: list[str] = field(default_factory=list)
    requisites: bool = False
    near_duplicates: bool = False
    recrawl_after: float = 0.0
    skip_near_duplicates: bool = False
    politeness_key: str = "host"
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    expected_urls: int = 10_000_000
    bloom_error: float = 0.0001
    shards: int = 64
    resolve: list[str] = field(default_factory=list)
    nameservers: list[str] = field(default_factory=list)
    ca_file: Path | None = None
    insecure: bool = False
    ip_allow: list[str] = field(default_factory=list)
    ports: list[int] = field(default_factory=list)
    warc: bool = True
    warc_max_bytes: int = 1024 * 1024 * 1024
    jsonl_chunk: int = 10_000
    lease_ttl: float = 120.0
    process_ttl: float = 600.0
    metrics_port: int = 0
    max_memory: int = 0
    progress: str = "auto"
    extract: str = ""  # rules file (.toml) or Python callback (module:function); built in each parser
    text: bool = False
    scrub_pii: bool = False
    extract_timeout: float = 5.0
    text_max_bytes: int = 2 * 1024 * 1024
    ui_port: int = 0
    ui_bind: str = "127.0.0.1"
    ui_token: str = ""
    log_format: str = "text"
    log_max_bytes: int = 10 * 1024 * 1024
    log_backups: int = 5
    alert_cmd: str = ""
    alert_error_rate: float = 0.10
    alert_window: float = 300.0
    alert_min_urls: int = 20
    alert_stall: float = 300.0
    alert_memory: int = 0
    alert_disk_free: int = 1024**3
    alert_redis_memory: int = 0
    timeouts: Timeouts = field(default_factory=Timeouts)
    limits: Limits = field(default_factory=Limits)
    politeness: Politeness = field(default_factory=Politeness)
    items_to: list[str] = field(default_factory=list)
    records_to: list[str] = field(default_factory=list)
    jsonl: bool = True
    header: list[str] = field(default_factory=list)
    cookies: bool = False
    proxy: list[str] = field(default_factory=list)
    render: str = "never"  # never | always | auto: which pages a browser renders (fetch/render/)
    render_include: list[str] = field(default_factory=list)
    renderers: int = 0  # pages rendered at once per fetcher process (0: 1 when rendering is on)
    chromium: Path | None = None
    render_allow_hosts: list[str] = field(default_factory=list)
    render_max_requests: int = 50
    render_scrolls: int = 0
    render_timeout: float = 30.0
    render_pages_per_browser: int = 100
    render_max_memory: int = 1024**3
    render_page_memory: int = 512  # MiB of JavaScript heap one rendered page may use (0: Chromium's own limit)
    render_resources: list[str] = field(default_factory=list)

    def effective_fetchers(self) -> int:
        return self.fetchers or max(1, os.cpu_count() or 1)

    def effective_parsers(self) -> int:
        return self.parsers or max(1, os.cpu_count() or 1)

    def rendering(self) -> bool:
        """Whether any page may be rendered in a browser (then each fetcher process owns one Chromium)."""
        return self.render != "never" or bool(self.render_include)

    def effective_renderers(self) -> int:
        return (self.renderers or 1) if self.rendering() else 0

    @property
    def product_token(self) -> str:
        """The robots.txt product token: the User-Agent's first word without its version (RFC 9309 2.2.1)."""
        first = self.user_agent.split(None, 1)[0] if self.user_agent.strip() else "webtrawl"
        return first.split("/", 1)[0]


# --- option table ------------------------------------------------------------------------------------------------
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


def _parse_bool(text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    low = str(text).strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _parse_ports(text: str | int | list[Any]) -> list[int]:
    items = text if isinstance(text, list) else str(text).split(",")
    ports = []
    for item in items:
        port = int(str(item).strip())
        if not 0 < port < 65536:
            raise ValueError(f"port out of range: {port}")
        ports.append(port)
    return ports


@dataclass(frozen=True, slots=True)
class Option:
    """One configurable value: where it lives in :class:`CrawlConfig` and how to read it from text."""

    path: str  # "delay" or "politeness.delay"
    parse: Callable[[Any], Any]
    help: str
    repeat: bool = False  # flag may be given several times, values collect into a list
    flag_only: bool = False  # not read from TOML/env (e.g. positional seeds)

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return "TRAWL_" + self.name.upper()


def _choice(*allowed: str) -> Callable[[Any], str]:
    def parse(text: Any) -> str:
        if str(text) not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, not {text!r}")
        return str(text)

    return parse


def _positive_int(text: Any) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(f"must be >= 0, not {value}")
    return value


def _positive_float(text: Any) -> float:
    value = float(text)
    if value < 0:
        raise ValueError(f"must be >= 0, not {value}")
    return value


def _path(text: Any) -> Path:
    return Path(str(text)).expanduser()


def parse_headers(items: list[str]) -> list[tuple[str, str]]:
    """``--header 'Name: value'`` items as pairs; ConfigError for anything that is not one header line."""
    out = []
    for item in items:
        name, sep, value = item.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name or any(c in item for c in "\r\n") or not name.replace("-", "").isalnum():
            raise ConfigError(f"--header wants 'Name: value', not {item!r}")
        out.append((name, value))
    return out


def _proxy_url(text: Any) -> str:
    from webtrawl.fetch.proxies import check_proxy

    return check_proxy(str(text))


def _sink_url(text: Any) -> str:
    """A sink URL, checked, with file paths made absolute (a resume from elsewhere writes to the same place)."""
    from webtrawl.store.sinks import normalize

    return normalize(str(text))


OPTIONS: tuple[Option, ...] = (
    Option("seeds_file", _path, "file with one seed URL per line (- for stdin)"),
    Option("out", _path, "output and state directory of this crawl"),
    Option("redis", str, "external Redis URL (redis://, rediss://, unix://); default: a private embedded server"),
    Option("cluster", _parse_bool, "--redis names a node of a Redis Cluster (the frontier spreads over its masters)"),
    Option("node_id", str, "name of this node in the crawl (leases are owned by it); trawl node: hostname-XXXXXX"),
    Option(
        "keep_running",
        _parse_bool,
        "trawl node: when the frontier is empty, wait for new URLs instead of exiting (stop: trawl stop or SIGTERM)",
    ),
    Option("max_pages", _positive_int, "stop after this many fetched pages in total (0: no limit)"),
    Option("max_time", _positive_float, "stop after this many seconds of this run (0: no limit)"),
    Option("fetchers", _positive_int, "fetcher processes (0: one per core)"),
    Option("parsers", _positive_int, "parser processes (0: one per core)"),
    Option("concurrency", _positive_int, "requests in flight per fetcher process"),
    Option("lease_batch", _positive_int, "hosts leased per Redis round trip"),
    Option(
        "session_pages",
        _positive_int,
        "pages a fetcher takes from one host in a row over its open connection, each after the host's delay, "
        "before the host goes back to the shared queue (0: no sessions)",
    ),
    Option(
        "idle_connections",
        _positive_int,
        "open keep-alive connections a fetcher keeps between requests (host sessions included); each idle TLS "
        "connection holds ~0.1-0.7 MiB of buffers, each one closed may cost a handshake later",
    ),
    Option("user_agent", str, "full User-Agent string; its first word is the robots.txt product token"),
    Option("scope", _choice("any", "host", "domain"), "follow links to any host, the seed's host or its domain"),
    Option(
        "sitemaps",
        _choice("auto", "only", "off"),
        "auto: read sitemaps and feeds (robots.txt Sitemap: lines, --sitemap) besides links; only: URLs come from "
        "sitemaps and feeds alone (links of pages are not followed); off: treat them as plain files. A sitemap "
        "priority below 0.5 queues a URL one level lower",
    ),
    Option("sitemap", str, "a sitemap, sitemap index or RSS/Atom feed URL to start from (repeatable)", repeat=True),
    Option("requisites", _parse_bool, "also fetch the images, scripts and style sheets of HTML pages (replay)"),
    Option(
        "recrawl_after",
        parse_duration,
        "keep fetched pages in a recrawl set, due again after this long (e.g. 1d, 6h, 90m, 3600); the interval then "
        "adapts per page (halved when it changed, doubled when not, within a quarter and 8x of this). A run on an "
        "existing crawl starts a round: due pages are fetched with a conditional GET (0: off). A rules file's "
        "recrawl_after overrides it for its pages; sitemap changefreq sets a URL's first interval and a newer lastmod "
        "brings it back",
    ),
    Option(
        "near_duplicates",
        _parse_bool,
        "give each HTML page a simhash of its main text and flag near-duplicates of earlier pages in the records",
    ),
    Option(
        "skip_near_duplicates",
        _parse_bool,
        "do not follow the links of near-duplicate pages (a trap defence for calendars and session ids; "
        "implies --near-duplicates)",
    ),
    Option(
        "politeness_key",
        _choice("host", "domain", "ip"),
        "what one politeness gap covers: a host name, a registered domain (public suffix list) or a server address "
        "(all host names on one IP); fixed when the crawl is created",
    ),
    Option("include", str, "only follow URLs matching this regex (repeatable)", repeat=True),
    Option("exclude", str, "never follow URLs matching this regex (repeatable)", repeat=True),
    Option("expected_urls", _positive_int, "how many distinct URLs the seen-filter is sized for"),
    Option("bloom_error", float, "target false-positive rate of the seen-URL filter"),
    Option("shards", _positive_int, "virtual shards of the frontier (fixed when a crawl is created)"),
    Option(
        "resolve",
        str,
        "HOST=IP overrides for DNS, '*.test=127.0.0.1' or '*=127.0.0.1' (repeatable)",
        repeat=True,
    ),
    Option(
        "nameservers",
        str,
        "DNS servers to ask (IP or IP:PORT, repeatable); default: the system's (names --resolve pins are never asked)",
        repeat=True,
    ),
    Option("ca_file", _path, "extra trusted CA certificates (PEM)"),
    Option("insecure", _parse_bool, "do not verify TLS certificates"),
    Option(
        "ip_allow",
        str,
        "allow only these networks (CIDR, repeatable); default: public unicast only",
        repeat=True,
    ),
    Option("ports", _parse_ports, "comma-separated list of allowed ports (default: all but browser-unsafe ports)"),
    Option("warc", _parse_bool, "write WARC files"),
    Option("warc_max_bytes", parse_size, "rotate WARC files at this size"),
    Option("jsonl_chunk", _positive_int, "records per JSONL chunk file"),
    Option("lease_ttl", _positive_float, "seconds before a fetch lease of a dead process is taken back"),
    Option("process_ttl", _positive_float, "seconds before a fetched page not yet stored is fetched again"),
    Option("metrics_port", _positive_int, "serve Prometheus metrics on this port (0: off)"),
    Option(
        "max_memory",
        parse_size,
        "pause leasing while the node's processes use more memory than this (e.g. 4GiB; 0: no limit)",
    ),
    Option("progress", _choice("auto", "live", "log", "off"), "live display on a terminal, log lines otherwise"),
    Option(
        "extract",
        str,
        "extract items with a rules file (rules.toml) or a Python callback (package.module:function, file.py:function)",
    ),
    Option("text", _parse_bool, "add each HTML page's main text, title, author, date and language to its record"),
    Option("scrub_pii", _parse_bool, "mask e-mail addresses and phone numbers in items and main text before storing"),
    Option(
        "extract_timeout",
        _positive_float,
        "seconds extraction (and, separately, main text) may take on one page before it is an extract-error",
    ),
    Option("text_max_bytes", parse_size, "largest HTML page the main-text extractor reads (the rest is cut)"),
    Option("timeouts.connect", _positive_float, "connect timeout in seconds"),
    Option("timeouts.total", _positive_float, "total timeout of one request in seconds"),
    Option("timeouts.robots", _positive_float, "total timeout of a robots.txt request in seconds"),
    Option("limits.max_body", parse_size, "largest body to download (e.g. 10MiB); larger ones are cut"),
    Option("limits.max_decompressed", parse_size, "largest decompressed body"),
    Option("limits.max_robots", parse_size, "largest robots.txt read (RFC 9309: at least 500KiB)"),
    Option(
        "limits.robots_cache",
        parse_size,
        "compiled robots.txt rules each fetcher keeps in memory (the rest are reread from Redis and compiled again)",
    ),
    Option("limits.max_url_length", _positive_int, "longest URL followed"),
    Option(
        "limits.max_query_variants",
        _positive_int,
        "spider-trap guard: most distinct query strings followed per host and path (0: no limit)",
    ),
    Option(
        "limits.max_path_repeats",
        _positive_int,
        "spider-trap guard: drop URLs whose path has one segment this many times (/a/a/a/; 0: no limit)",
    ),
    Option("limits.max_redirects", _positive_int, "redirect hops followed (each through the frontier)"),
    Option("limits.max_depth", _positive_int, "largest link depth from a seed (0: no limit)"),
    Option("limits.host_queue_cap", _positive_int, "most URLs queued for one host"),
    Option("limits.host_budget", _positive_int, "most URLs ever admitted for one host (0: no limit)"),
    Option("limits.frontier_cap", _positive_int, "most URLs queued in the whole frontier"),
    Option("politeness.delay", _positive_float, "seconds between the end of one request to a host and the next"),
    Option("politeness.max_crawl_delay", _positive_float, "cap on a robots.txt Crawl-delay, in seconds"),
    Option("politeness.backoff_base", _positive_float, "first back-off after a 429/503/network error, in seconds"),
    Option("politeness.backoff_max", _positive_float, "longest back-off, in seconds"),
    Option("politeness.max_retries", _positive_int, "retries of a URL after a transient failure"),
    Option("politeness.park_after", _positive_int, "consecutive failures after which a host is parked"),
    Option("politeness.robots_ttl", _positive_float, "seconds a robots.txt is cached"),
    Option("politeness.robots_retry", _positive_float, "first retry of an unreachable robots.txt, in seconds"),
    Option(
        "politeness.robots_give_up",
        _positive_int,
        "unreachable robots.txt results in a row after which the host's URLs are dropped",
    ),
    Option("politeness.honor_nofollow", _parse_bool, "obey meta robots / X-Robots-Tag nofollow and rel=nofollow"),
    Option(
        "politeness.honor_noindex",
        _parse_bool,
        "do not archive noindex pages in WARC (their JSONL record is still written)",
    ),
    Option(
        "politeness.adaptive_delay",
        _positive_float,
        "adapt the gap to the server: max(delay, this factor x the response time), e.g. 2 (0: off)",
    ),
    Option("politeness.delay_jitter", _positive_float, "lengthen every gap by a random 0..this fraction of it"),
    Option("politeness.slow_down_403", _parse_bool, "treat a 403 answer as a slow-down signal (back-off) like 429"),
    # --- operating a crawl: dashboard, logs, alerts ---
    Option("ui_port", _positive_int, "serve the web dashboard on this port (0: off)"),
    Option("ui_bind", str, "address the dashboard listens on; anything but loopback needs --ui-token"),
    Option("ui_token", str, "token the dashboard asks for (?token=... or Authorization: Bearer ...)"),
    Option("log_format", _choice("text", "json"), "log lines as text or as one JSON object per line"),
    Option("log_max_bytes", parse_size, "rotate <out>/logs/trawl.log at this size (0: no log file)"),
    Option("log_backups", _positive_int, "rotated log files kept"),
    Option("alert_cmd", str, "shell command run for each alert (TRAWL_ALERT_* variables, JSON on stdin)"),
    Option("alert_error_rate", _positive_float, "alert when more than this share of URLs fail (0: off)"),
    Option("alert_window", _positive_float, "seconds over which the error rate is measured"),
    Option("alert_min_urls", _positive_int, "URLs that must end within the window before the error rate counts"),
    Option("alert_stall", _positive_float, "alert after this many seconds without a fetched page (0: off)"),
    Option("alert_memory", parse_size, "alert above this node memory (0: 90%% of --max-memory if set)"),
    Option("alert_disk_free", parse_size, "alert when free space under --out drops below this (0: off)"),
    Option("alert_redis_memory", parse_size, "alert above this Redis memory (0: 90%% of its maxmemory if set)"),
    Option(
        "items_to",
        _sink_url,
        "also write extracted items to this sink (repeatable): csv:DIR, parquet:DIR, jsonl:DIR, "
        "sqlite:///PATH.db, postgresql://USER@HOST/DB?table=NAME",
        repeat=True,
    ),
    Option("records_to", _sink_url, "also write page records to this sink (repeatable; same URLs as --items-to)", True),
    Option("jsonl", _parse_bool, "write the crawl's own items/ and records/ JSONL (--no-jsonl: only the sinks)"),
    # --- request options (every fetch, the browser's requests included) ---
    Option("header", str, "extra request header 'Name: value' on every request (repeatable)", repeat=True),
    Option("cookies", _parse_bool, "keep cookies per host (off by default: broad crawls should not carry state)"),
    Option(
        "proxy",
        _proxy_url,
        "HTTP(S) proxy http://HOST:PORT (repeatable): each host always uses the same one; a dead one is skipped",
        repeat=True,
    ),
    # --- JavaScript pages: a browser fetch path (fetch/render/) ---
    Option(
        "render",
        _choice("never", "always", "auto"),
        "render pages in headless Chromium: never, always, or auto (HTTP first; render script-built shells and pages "
        "the --extract rules find no item in and, from then on, every page of their host)",
    ),
    Option("render_include", str, "always render URLs matching this regex (repeatable)", repeat=True),
    Option("renderers", _positive_int, "pages rendered at once per fetcher process (0: 1 when rendering is on)"),
    Option("chromium", _path, "the Chromium executable to render with (default: chromium on PATH)"),
    Option(
        "render_allow_hosts",
        str,
        "hosts a rendered page may load from besides its own (repeatable; *.example.com for subdomains)",
        repeat=True,
    ),
    Option("render_max_requests", _positive_int, "most requests one render makes (the page itself included)"),
    Option("render_scrolls", _positive_int, "scroll to the bottom this many times (infinite scroll pages)"),
    Option("render_timeout", _positive_float, "seconds one render may take in all"),
    Option("render_pages_per_browser", _positive_int, "pages a browser renders before it is restarted (0: never)"),
    Option(
        "render_max_memory",
        parse_size,
        "restart a fetcher's browser when its processes use more memory than this (checked between pages; 0: never)",
    ),
    Option(
        "render_page_memory",
        _positive_int,
        "MiB of JavaScript heap one rendered page may use; a page past it fails with render-memory (0: no cap)",
    ),
    Option(
        "render_resources",
        str,
        "resource types a render also loads (repeatable: image, media, font; blocked by default)",
        repeat=True,
    ),
)
_BY_NAME = {opt.name: opt for opt in OPTIONS}


def _set(cfg: CrawlConfig, opt: Option, value: Any) -> None:
    if "." in opt.path:
        group_name, attr = opt.path.split(".", 1)
        group = getattr(cfg, group_name)
        setattr(cfg, group_name, dataclasses.replace(group, **{attr: value}))
    else:
        setattr(cfg, opt.path, value)


def _apply(cfg: CrawlConfig, opt: Option, raw: Any, source: str) -> None:
    try:
        if opt.repeat:
            items = raw if isinstance(raw, list) else [raw]
            value: Any = [opt.parse(item) for item in items]
        else:
            value = opt.parse(raw)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{source}: {opt.name.replace('_', '-')}: {exc}") from None
    _set(cfg, opt, value)


def add_arguments(parser: argparse.ArgumentParser, names: Iterable[str] | None = None) -> None:
    """Add a flag for each option (or the named ones) to ``parser``; values stay raw text until :func:`load`."""
    wanted = set(names) if names is not None else None
    for opt in OPTIONS:
        if wanted is not None and opt.name not in wanted:
            continue
        if opt.parse is _parse_bool:
            parser.add_argument(opt.flag, dest=opt.name, action=argparse.BooleanOptionalAction, help=opt.help)
        elif opt.repeat:
            parser.add_argument(opt.flag, dest=opt.name, action="append", metavar="VALUE", help=opt.help)
        else:
            parser.add_argument(opt.flag, dest=opt.name, metavar="VALUE", help=opt.help)


def to_saved(cfg: CrawlConfig) -> dict[str, Any]:
    """The options as a flat JSON-able dict (what a crawl stores so that a resume uses the same settings)."""
    saved: dict[str, Any] = {}
    for opt in OPTIONS:
        obj: Any = cfg
        for part in opt.path.split("."):
            obj = getattr(obj, part)
        if isinstance(obj, Path):
            obj = str(obj)
        if obj is not None:
            saved[opt.name] = obj
    return saved


def load(
    flags: Mapping[str, Any] | None = None,
    *,
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    seeds: Iterable[str] = (),
    saved: Mapping[str, Any] | None = None,
) -> CrawlConfig:
    """Build the config from its layers: defaults < saved (resume) < TOML < env < flags.

    Raises :class:`ConfigError` with a one-line message.
    """
    cfg = CrawlConfig()
    for key, raw in (saved or {}).items():
        if key in _BY_NAME:
            _apply(cfg, _BY_NAME[key], raw, "saved crawl settings")
    if config_file is None and Path("trawl.toml").is_file():
        config_file = Path("trawl.toml")
    if config_file is not None:
        try:
            data = tomllib.loads(config_file.read_text())
        except OSError as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{config_file}: not valid TOML: {exc}") from None
        for key, raw in data.items():
            opt = _BY_NAME.get(key.replace("-", "_"))
            if opt is None:
                raise ConfigError(f"{config_file}: unknown option {key!r}")
            _apply(cfg, opt, raw, str(config_file))
    environ = os.environ if env is None else env
    for opt in OPTIONS:
        if opt.env in environ:
            raw_env: Any = environ[opt.env]
            if opt.repeat:
                raw_env = [part for part in raw_env.split(",") if part]
            _apply(cfg, opt, raw_env, opt.env)
    for name, raw in (flags or {}).items():
        if raw is None or name not in _BY_NAME:
            continue
        _apply(cfg, _BY_NAME[name], raw, _BY_NAME[name].flag)
    cfg.seeds = list(seeds)
    _validate(cfg)
    return cfg


_NODE_ID_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # no '/' or space: lease owners are "<node id>/f<index>"


def _validate(cfg: CrawlConfig) -> None:
    for pattern in (*cfg.include, *cfg.exclude):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"bad regex {pattern!r}: {exc}") from None
    if not 0.0 < cfg.bloom_error < 0.5:
        raise ConfigError(f"--bloom-error must be between 0 and 0.5, not {cfg.bloom_error}")
    if cfg.shards < 1 or cfg.shards > 16384:
        raise ConfigError(f"--shards must be between 1 and 16384, not {cfg.shards}")
    if cfg.concurrency < 1:
        raise ConfigError("--concurrency must be at least 1")
    if cfg.lease_batch < 1:
        raise ConfigError("--lease-batch must be at least 1")
    if not _NODE_ID_RE.fullmatch(cfg.node_id):
        raise ConfigError(f"--node-id must be letters, digits, '.', '_' or '-' (at most 64), not {cfg.node_id!r}")
    if not cfg.jsonl and not cfg.records_to:
        raise ConfigError("--no-jsonl needs a --records-to sink: the page records must go somewhere")
    if cfg.items_to and not cfg.extract:
        raise ConfigError("--items-to needs --extract: without it a crawl has no items")
    if cfg.extract and not cfg.jsonl and not cfg.items_to:
        raise ConfigError("--no-jsonl with --extract needs an --items-to sink: the items must go somewhere")
    parse_headers(cfg.header)
    for pattern in cfg.render_include:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError(f"--render-include: bad regex {pattern!r}: {exc}") from None
    for kind in cfg.render_resources:
        if kind not in ("image", "media", "font"):
            raise ConfigError(f"--render-resources takes image, media or font, not {kind!r}")
    for item in cfg.resolve:
        host, sep, ip = item.partition("=")
        if not sep or not host or not ip:
            raise ConfigError(f"--resolve wants HOST=IP, not {item!r}")
