"""One typed configuration object, filled in layers: defaults < TOML file < ``TRAWL_*`` env < command-line flags.

Every option is declared once in :data:`webtrawl.options.OPTIONS` (name, type, help); the argparse flags, the TOML
keys and the environment variable names are all derived from that table, so the four layers cannot drift apart.
Options that belong together are grouped into small frozen value objects (:class:`Timeouts`, :class:`Limits`,
:class:`Politeness`) that the stages take instead of the whole config.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webtrawl import __version__
from webtrawl.errors import ConfigError
from webtrawl.options import BY_NAME, OPTIONS, Option, parse_bool, parse_headers

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
    idle_connections: int = 384
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
    spider: str = ""  # a webtrawl.Spider subclass (module:Class); built in each parser, instead of extract
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

    def extracting(self) -> bool:
        """Whether parsers run the extraction stage (items and/or main text); without it they never load it."""
        return self.extracts_items() or self.text

    def extracts_items(self) -> bool:
        """Whether the crawl has items: an --extract rules file or callback, or a --spider."""
        return bool(self.extract or self.spider)

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
    except ConfigError:
        raise  # already one line naming the option (a proxy or sink URL's own check)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{source}: {opt.name.replace('_', '-')}: {exc}") from None
    _set(cfg, opt, value)


def add_arguments(parser: argparse.ArgumentParser, names: Iterable[str] | None = None) -> None:
    """Add a flag for each option (or the named ones) to ``parser``; values stay raw text until :func:`load`."""
    wanted = set(names) if names is not None else None
    for opt in OPTIONS:
        if wanted is not None and opt.name not in wanted:
            continue
        if opt.parse is parse_bool:
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
        if key in BY_NAME:
            _apply(cfg, BY_NAME[key], raw, "saved crawl settings")
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
            opt = BY_NAME.get(key.replace("-", "_"))
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
        if raw is None or name not in BY_NAME:
            continue
        _apply(cfg, BY_NAME[name], raw, BY_NAME[name].flag)
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
    if cfg.extract and cfg.spider:
        raise ConfigError("--extract and --spider are two ways to extract: give one of them")
    if cfg.items_to and not cfg.extracts_items():
        raise ConfigError("--items-to needs --extract or --spider: without them a crawl has no items")
    if cfg.extracts_items() and not cfg.jsonl and not cfg.items_to:
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
