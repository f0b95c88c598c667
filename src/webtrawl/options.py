"""Every option of a crawl, declared once: its place in :class:`~webtrawl.config.CrawlConfig`, how its text is read
(sizes, durations, ports, choices...) and its help. The flags, TOML keys and ``TRAWL_*`` variables are derived from
this table by :mod:`webtrawl.config`, which owns the layering and the checks across options.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
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
    Option("cluster", parse_bool, "--redis names a node of a Redis Cluster (the frontier spreads over its masters)"),
    Option("node_id", str, "name of this node in the crawl (leases are owned by it); trawl node: hostname-XXXXXX"),
    Option(
        "keep_running",
        parse_bool,
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
    Option("requisites", parse_bool, "also fetch the images, scripts and style sheets of HTML pages (replay)"),
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
        parse_bool,
        "give each HTML page a simhash of its main text and flag near-duplicates of earlier pages in the records",
    ),
    Option(
        "skip_near_duplicates",
        parse_bool,
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
    Option("insecure", parse_bool, "do not verify TLS certificates"),
    Option(
        "ip_allow",
        str,
        "allow only these networks (CIDR, repeatable); default: public unicast only",
        repeat=True,
    ),
    Option("ports", _parse_ports, "comma-separated list of allowed ports (default: all but browser-unsafe ports)"),
    Option("warc", parse_bool, "write WARC files"),
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
    Option(
        "spider",
        str,
        "extract items with a webtrawl.Spider subclass (package.module:Class, file.py:Class): its start_urls are "
        "seeds, each page goes to the callback its link names (instead of --extract)",
    ),
    Option("text", parse_bool, "add each HTML page's main text, title, author, date and language to its record"),
    Option("scrub_pii", parse_bool, "mask e-mail addresses and phone numbers in items and main text before storing"),
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
    Option("politeness.honor_nofollow", parse_bool, "obey meta robots / X-Robots-Tag nofollow and rel=nofollow"),
    Option(
        "politeness.honor_noindex",
        parse_bool,
        "do not archive noindex pages in WARC (their JSONL record is still written)",
    ),
    Option(
        "politeness.adaptive_delay",
        _positive_float,
        "adapt the gap to the server: max(delay, this factor x the response time), e.g. 2 (0: off)",
    ),
    Option("politeness.delay_jitter", _positive_float, "lengthen every gap by a random 0..this fraction of it"),
    Option("politeness.slow_down_403", parse_bool, "treat a 403 answer as a slow-down signal (back-off) like 429"),
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
    Option("jsonl", parse_bool, "write the crawl's own items/ and records/ JSONL (--no-jsonl: only the sinks)"),
    # --- request options (every fetch, the browser's requests included) ---
    Option("header", str, "extra request header 'Name: value' on every request (repeatable)", repeat=True),
    Option("cookies", parse_bool, "keep cookies per host (off by default: broad crawls should not carry state)"),
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
BY_NAME = {opt.name: opt for opt in OPTIONS}
