"""Every option of a crawl, declared once: its place in :class:`~webtrawl.config.CrawlConfig` (``group.name``), how
its text is read (:mod:`webtrawl.values`) and its help. The flags, TOML keys and ``TRAWL_*`` variables are derived from
this table by :mod:`webtrawl.config`, which owns the layering and the checks across options.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from webtrawl.netvalues import (
    bind_address,
    ca_file,
    host_pattern,
    nameserver,
    network,
    port,
    ports,
    proxy,
    redis_url,
    resolve_pin,
)
from webtrawl.values import (
    age_recipient,
    at_least_one,
    choice,
    count_or_auto,
    css_selector,
    fetcher_name,
    header,
    node_id,
    non_negative_float,
    non_negative_int,
    one_line,
    parse_body_size,
    parse_bool,
    parse_duration,
    parse_size,
    path,
    probability,
    process_count,
    regex,
    shard_count,
    share,
    sink_url,
    spider_arg,
)


@dataclass(frozen=True, slots=True)
class Option:
    """One configurable value: where it lives in :class:`CrawlConfig` and how to read it from text."""

    path: str  # "group.name" (or "group.sub.name") in CrawlConfig; the name alone makes flag, TOML key, env
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


def _group(name: str, *options: Option) -> tuple[Option, ...]:
    """The options of one group of :class:`~webtrawl.config.CrawlConfig`: their paths get ``name.``."""
    return tuple(dataclasses.replace(opt, path=f"{name}.{opt.path}") for opt in options)


# crawl: which crawl, where its state lives, how long it runs, with how many processes
_CRAWL = _group(
    "crawl",
    Option("seeds_file", path, "file with one seed URL per line (- for stdin)"),
    Option("out", path, "output and state directory of this crawl"),
    Option("redis", redis_url, "external Redis (redis://, rediss://, unix://, redis+sentinel://); default: embedded"),
    Option("cluster", parse_bool, "--redis names a node of a Redis Cluster (the frontier spreads over its masters)"),
    Option("node_id", node_id, "name of this node in the crawl (leases are owned by it); trawl node: hostname-XXXXXX"),
    Option(
        "keep_running",
        parse_bool,
        "when the frontier is empty, wait for new URLs (trawl seed, requeue) instead of exiting (end: trawl stop)",
    ),
    Option("max_pages", non_negative_int, "stop after this many fetched pages in total (0: no limit)"),
    Option("max_time", parse_duration, "stop after this long a run: seconds, or 90m, 6h, 1d (0: no limit)"),
    Option("fetchers", process_count, "fetcher processes (0: one per core)"),
    Option("parsers", process_count, "parser processes (0: one per core)"),
)


# fetch: every request, the browser's too: concurrency, connections, identity, DNS, TLS, addresses, headers
_FETCH = _group(
    "fetch",
    Option("concurrency", at_least_one, "requests in flight per fetcher process (more: see --max-concurrency)"),
    Option(
        "max_concurrency",
        non_negative_int,
        "most requests in flight per fetcher: from --concurrency it grows toward this while every slot is in use and "
        "the CPUs have idle time, and shrinks back when they have none (0: twice --concurrency; at or under "
        "--concurrency: fixed)",
    ),
    Option("lease_batch", at_least_one, "hosts leased per Redis round trip"),
    Option(
        "session_pages",
        non_negative_int,
        "pages a fetcher takes from one host in a row over its open connection, each after the host's delay, "
        "before the host goes back to the shared queue (0: no sessions)",
    ),
    Option(
        "idle_connections",
        non_negative_int,
        "open keep-alive connections a fetcher keeps between requests (host sessions included); each idle TLS "
        "connection holds ~0.05 MiB, each one closed may cost a handshake later",
    ),
    Option("user_agent", one_line, "User-Agent; robots.txt token: its first word, or X of '(compatible; X/1.0)'"),
    Option("resolve", resolve_pin, "HOST=IP DNS pins: '*.test=127.0.0.1' or '*=127.0.0.1' (repeatable)", repeat=True),
    Option(
        "nameservers",
        nameserver,
        "DNS servers to ask (IP or IP:PORT, repeatable); default: the system's (names --resolve pins are never asked)",
        repeat=True,
    ),
    Option("ca_file", ca_file, "extra trusted CA certificates (PEM)"),
    Option("insecure", parse_bool, "do not verify TLS certificates"),
    Option(
        "ip_allow",
        network,
        "allow only these networks (CIDR, repeatable); default: public unicast only",
        repeat=True,
    ),
    Option("ports", ports, "comma-separated list of allowed ports (default: all but browser-unsafe ports)"),
    Option("timeouts.connect", non_negative_float, "connect timeout in seconds"),
    Option("timeouts.total", non_negative_float, "total timeout of one request in seconds"),
    Option("timeouts.robots", non_negative_float, "total timeout of a robots.txt request in seconds"),
    Option("header", header, "extra request header 'Name: value' on every request (repeatable)", repeat=True),
    Option("cookies", parse_bool, "one cookie jar per crawl, in its Redis (off: broad crawls should not carry state)"),
    Option(
        "proxy",
        proxy,
        "HTTP(S) proxy http://HOST:PORT (repeatable): each host always uses the same one; a dead one is skipped",
        repeat=True,
    ),
    Option("fetcher", fetcher_name, "http, browser, or package.module:Class?k=v (repeatable; fetch/base.py)", True),
)


# politeness: gaps, back-off, robots.txt
_POLITENESS = _group(
    "politeness",
    Option("delay", non_negative_float, "seconds between the end of one request to a host and the next"),
    Option("max_crawl_delay", non_negative_float, "cap on a robots.txt Crawl-delay, in seconds"),
    Option("backoff_base", non_negative_float, "first back-off after a 429/503/network error, in seconds"),
    Option("backoff_max", parse_duration, "longest back-off: seconds, or 10m, 1h"),
    Option("max_retries", non_negative_int, "retries of a URL after a transient failure"),
    Option("park_after", non_negative_int, "failures in a row that park a host: its queued URLs end as host-down"),
    Option("robots_ttl", parse_duration, "how long a robots.txt is cached: seconds, or 6h, 1d"),
    Option("robots_retry", non_negative_float, "first retry of an unreachable robots.txt, in seconds"),
    Option(
        "robots_give_up",
        non_negative_int,
        "unreachable robots.txt results in a row after which it is given up: the origin's queued URLs end at once",
    ),
    Option("honor_nofollow", parse_bool, "obey meta robots / X-Robots-Tag nofollow and rel=nofollow"),
    Option(
        "honor_noindex",
        parse_bool,
        "do not archive noindex pages in WARC (their JSONL record is still written)",
    ),
    Option(
        "adaptive_delay",
        non_negative_float,
        "adapt the gap to the server: max(delay, this factor x the response time), e.g. 2 (0: off)",
    ),
    Option("delay_jitter", non_negative_float, "lengthen every gap by a random 0..this fraction of it"),
    Option("slow_down_403", parse_bool, "treat a 403 answer as a slow-down signal (back-off) like 429"),
)


# limits: sizes, URL lengths, depths, caps
_LIMITS = _group(
    "limits",
    Option("max_body", parse_body_size, "largest body to download (e.g. 10MiB); larger ones are cut"),
    Option("max_decompressed", parse_size, "largest decompressed body"),
    Option("max_robots", parse_size, "largest robots.txt read (RFC 9309: at least 500KiB)"),
    Option(
        "robots_cache",
        parse_size,
        "compiled robots.txt rules each fetcher keeps in memory (the rest are reread from Redis and compiled again)",
    ),
    Option("max_url_length", non_negative_int, "longest URL followed"),
    Option(
        "max_query_variants",
        non_negative_int,
        "spider-trap guard: most distinct query strings followed per host and path (0: no limit)",
    ),
    Option(
        "max_path_repeats",
        non_negative_int,
        "spider-trap guard: drop URLs whose path has one segment this many times (/a/a/a/; 0: no limit)",
    ),
    Option("max_redirects", non_negative_int, "redirect hops followed (each through the frontier)"),
    Option("max_depth", non_negative_int, "largest link depth from a seed (0: no limit)"),
    Option("host_queue_cap", non_negative_int, "most URLs queued for one host"),
    Option("host_budget", non_negative_int, "most URLs ever admitted for one host (0: no limit)"),
    Option("frontier_cap", non_negative_int, "most URLs queued in the whole frontier"),
)


# discovery: which URLs are followed
_DISCOVERY = _group(
    "discovery",
    Option("scope", choice("any", "host", "domain"), "follow links to any host, the seed's host or its domain"),
    Option(
        "sitemaps",
        choice("auto", "only", "off"),
        "auto: read sitemaps and feeds (robots.txt Sitemap: lines, --sitemap) besides links; only: URLs come from "
        "sitemaps and feeds alone (links of pages are not followed); off: treat them as plain files. A sitemap "
        "priority below 0.5 queues a URL one level lower",
    ),
    Option(
        "sitemap",
        str,
        "a sitemap, sitemap index or RSS/Atom feed URL to start from (repeatable)",
        repeat=True,
    ),
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
    Option("include", regex, "only follow URLs matching this regex (repeatable)", repeat=True),
    Option("exclude", regex, "never follow URLs matching this regex (repeatable)", repeat=True),
)


# frontier: its shape (fixed when a crawl is created) and its leases
_FRONTIER = _group(
    "frontier",
    Option(
        "politeness_key",
        choice("host", "domain", "ip"),
        "what one politeness gap covers: a host name, a registered domain (public suffix list) or a server address "
        "(all host names on one IP); fixed when the crawl is created",
    ),
    Option("expected_urls", non_negative_int, "URLs the seen filter holds before it grows (then +1 read/new URL)"),
    Option("bloom_error", probability, "target false-positive rate of the seen-URL filter"),
    Option("shards", shard_count, "virtual shards of the frontier (fixed when a crawl is created)"),
    Option("lease_ttl", non_negative_float, "seconds before a fetch lease of a dead process is taken back"),
    Option("process_ttl", non_negative_float, "seconds before a fetched page not yet stored is fetched again"),
    Option("redis_replicas", count_or_auto, "replicas a page's links must reach first (auto: those Redis has)"),
)


# output: WARC, the crawl's own JSONL, sinks
_OUTPUT = _group(
    "output",
    Option("warc", parse_bool, "write WARC files"),
    Option("warc_max_bytes", parse_size, "rotate WARC files at this size"),
    Option("jsonl_chunk", non_negative_int, "records per JSONL chunk file"),
    Option(
        "items_to",
        sink_url,
        "also write extracted items to this sink (repeatable): csv:DIR, parquet:DIR, jsonl:DIR, json:FILE, "
        "sqlite:///PATH.db, postgresql://USER@HOST/DB?table=NAME, mysql://USER@HOST/DB?table=NAME, "
        "nats://HOST/SUBJECT, amqp://USER@HOST/VHOST?queue=NAME, or package.module:Class?k=v",
        repeat=True,
    ),
    Option("records_to", sink_url, "also write page records to this sink (repeatable; same URLs as --items-to)", True),
    Option("jsonl", parse_bool, "write the crawl's own items/ and records/ JSONL (--no-jsonl: only the sinks)"),
    Option("encrypt_to", age_recipient, "encrypt the output files to this age public key (repeatable)", True),
    Option("chunks_to", sink_url, "also write --chunks rows to this sink (repeatable; jsonl:DIR, mod:Class)", True),
    Option("changes_to", sink_url, "also write --changes rows to this sink (repeatable; as --chunks-to)", True),
    Option("on_change", str, "with --changes: shell command run for each change row, the row as JSON on stdin"),
)


# extraction: items and main text
_EXTRACTION = _group(
    "extraction",
    Option(
        "extract", str, "extract items with a rules file (rules.toml) or a callback (mod:function, file.py:function)"
    ),
    Option("spider", str, "extract items with a Spider subclass (mod:Class, file.py:Class) instead of --extract"),
    Option("spider_arg", spider_arg, "NAME=VALUE: set the spider's attribute NAME, as Scrapy's -a (repeatable)", True),
    Option("text", parse_bool, "add each HTML page's main text, title, author, date and language to its record"),
    Option("markdown", parse_bool, "add each HTML page's main content as Markdown (headings, lists, tables, links)"),
    Option("chunks", non_negative_int, "cut the Markdown into chunks of at most this many characters (0: off)"),
    Option("changes", parse_bool, "with --recrawl-after: a row in changes/*.jsonl per page that changed, with diffs"),
    Option("changes_links", parse_bool, "with --changes: a page whose set of links changed is a change (links_diff)"),
    Option("text_exclude", css_selector, "leave elements matching this CSS out of the main text (repeatable)", True),
    Option("scrub_pii", parse_bool, "mask e-mail addresses and phone numbers in items and main text before storing"),
    Option(
        "extract_timeout",
        non_negative_float,
        "seconds extraction (and, separately, main text) may take on one page before it is an extract-error",
    ),
    Option("text_max_bytes", parse_size, "largest HTML page the main-text extractor reads (the rest is cut)"),
)


# rendering: JavaScript pages: a browser fetch path (fetch/render/)
_RENDERING = _group(
    "rendering",
    Option(
        "render",
        choice("never", "always", "auto"),
        "render pages in headless Chromium: never, always, or auto (HTTP first; render script-built shells and pages "
        "the --extract rules find no item in and, from then on, every page of their host)",
    ),
    Option("render_include", regex, "always render URLs matching this regex (repeatable)", repeat=True),
    Option("renderers", non_negative_int, "pages rendered at once per fetcher process (0: 1 when rendering is on)"),
    Option("chromium", path, "the Chromium executable to render with (default: chromium on PATH)"),
    Option(
        "render_allow_hosts",
        host_pattern,
        "hosts a rendered page may load from besides its own (repeatable; *.example.com for subdomains)",
        repeat=True,
    ),
    Option("render_max_requests", non_negative_int, "most requests one render makes (the page itself included)"),
    Option("render_scrolls", non_negative_int, "scroll to the bottom this many times (infinite scroll pages)"),
    Option("render_timeout", non_negative_float, "seconds one render may take in all"),
    Option("render_pages_per_browser", non_negative_int, "pages a browser renders before it is restarted (0: never)"),
    Option(
        "render_max_memory",
        parse_size,
        "restart a fetcher's browser when its processes use more memory than this (checked between pages; 0: never)",
    ),
    Option(
        "render_page_memory",
        non_negative_int,
        "MiB of JavaScript heap one rendered page may use; a page past it fails with render-memory (0: no cap)",
    ),
    Option(
        "render_resources",
        choice("image", "media", "font"),
        "resource types a render also loads (repeatable: image, media, font; blocked by default)",
        repeat=True,
    ),
)


# operations: operating a crawl: progress, dashboard, logs, alerts, metrics, memory
_OPERATIONS = _group(
    "operations",
    Option("metrics_port", port, "serve Prometheus metrics on this port (0: off)"),
    Option(
        "max_memory",
        parse_size,
        "pause leasing while the node's processes use more memory than this (e.g. 4GiB; 0: no limit)",
    ),
    Option("progress", choice("auto", "live", "log", "off"), "live display on a terminal, log lines otherwise"),
    Option("ui_port", port, "serve the web dashboard on this port (0: off)"),
    Option("ui_bind", bind_address, "address the dashboard listens on; anything but loopback needs --ui-token"),
    Option("ui_token", str, "token the dashboard asks for (?token=... or Authorization: Bearer ...)"),
    Option("log_format", choice("text", "json"), "log lines as text or as one JSON object per line"),
    Option("log_max_bytes", parse_size, "rotate <out>/logs/trawl.log at this size (0: no log file)"),
    Option("log_backups", non_negative_int, "rotated log files kept"),
    Option("alert_cmd", str, "shell command run for each alert (TRAWL_ALERT_* variables, JSON on stdin)"),
    Option("alert_error_rate", share, "alert when more than this share of URLs fail (0: off)"),
    Option("alert_window", parse_duration, "how long the error rate is measured over: seconds, or 10m"),
    Option("alert_min_urls", non_negative_int, "URLs that must end within the window before the error rate counts"),
    Option("alert_stall", parse_duration, "alert after this long without a fetched page: seconds, or 10m (0: off)"),
    Option("alert_memory", parse_size, "alert above this node memory (0: 90%% of --max-memory if set)"),
    Option("alert_disk_free", parse_size, "alert when free space under --out drops below this (0: off)"),
    Option("alert_redis_memory", parse_size, "alert above this Redis memory (0: 90%% of its maxmemory if set)"),
)

OPTIONS: tuple[Option, ...] = (
    _CRAWL + _FETCH + _POLITENESS + _LIMITS + _DISCOVERY + _FRONTIER + _OUTPUT + _EXTRACTION + _RENDERING + _OPERATIONS
)
BY_NAME = {opt.name: opt for opt in OPTIONS}
