"""One typed configuration, filled in layers: defaults < saved crawl settings < TOML file < ``TRAWL_*`` env < flags.

Every option is declared once in :data:`webtrawl.options.OPTIONS` (its place ``group.name``, type, help); the
argparse flags, the TOML keys and the environment variable names are all derived from that table, so the layers
cannot drift apart. The options live in small frozen groups (:class:`FetchOptions`, :class:`Politeness`,
:class:`Limits`...): each stage takes the groups it needs, never the whole :class:`CrawlConfig`, and nothing changes
a config once it is built (a changed copy comes from :meth:`CrawlConfig.with_options`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from webtrawl import __version__
from webtrawl.configcheck import validate, warn_unknown_env
from webtrawl.errors import ConfigError
from webtrawl.options import BY_NAME, OPTIONS, Option
from webtrawl.values import env_list, parse_bool, product_of, text_only

DEFAULT_USER_AGENT = f"webtrawl/{__version__} (+https://github.com/webtrawl/webtrawl)"
# A new crawl's frontier (FrontierOptions, FrontierSettings). The seen filter's first bitmaps hold EXPECTED_URLS
# (3.2 MiB): a node's first minute or so; each growth costs every new URL one more block read (RESULTS.md).
SHARDS = 64
EXPECTED_URLS = 1_000_000
BLOOM_ERROR = 0.0001


@dataclass(frozen=True, slots=True)
class CrawlOptions:
    """Which crawl, where its state lives, how long it runs and with how many processes."""

    seeds: tuple[str, ...] = ()
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

    def effective_fetchers(self) -> int:
        return self.fetchers or max(1, os.cpu_count() or 1)

    def effective_parsers(self) -> int:
        return self.parsers or max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class Timeouts:
    connect: float = 10.0
    total: float = 60.0
    robots: float = 20.0


@dataclass(frozen=True, slots=True)
class FetchOptions:
    """How requests are made: concurrency, connections, identity, DNS, TLS, allowed addresses, headers, proxies."""

    concurrency: int = 128
    max_concurrency: int = 0  # 0: twice concurrency (fetch/capacity.py)
    lease_batch: int = 32
    session_pages: int = 50
    idle_connections: int = 384
    user_agent: str = DEFAULT_USER_AGENT
    resolve: tuple[str, ...] = ()
    nameservers: tuple[str, ...] = ()
    ca_file: Path | None = None
    insecure: bool = False
    ip_allow: tuple[str, ...] = ()
    ports: tuple[int, ...] = ()
    header: tuple[str, ...] = ()
    cookies: bool = False
    proxy: tuple[str, ...] = ()
    fetcher: tuple[str, ...] = ()  # http, browser or module:Class[?k=v] (fetch/base.py), one per role
    timeouts: Timeouts = field(default_factory=Timeouts)

    @property
    def product_token(self) -> str:
        """The robots.txt product token of the User-Agent (:func:`webtrawl.values.product_of`)."""
        return product_of(self.user_agent)


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


@dataclass(frozen=True, slots=True)
class DiscoveryOptions:
    """Which URLs a crawl follows: scope, patterns, sitemaps, page requisites, near-duplicates, recrawls."""

    scope: str = "any"
    sitemaps: str = "auto"
    sitemap: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    requisites: bool = False
    near_duplicates: bool = False
    skip_near_duplicates: bool = False
    recrawl_after: float = 0.0


@dataclass(frozen=True, slots=True)
class FrontierOptions:
    """How the frontier is built (most fixed when a crawl is created) and when leases expire."""

    shards: int = SHARDS
    expected_urls: int = EXPECTED_URLS  # the seen filter's first bitmaps; it grows past that
    bloom_error: float = BLOOM_ERROR
    politeness_key: str = "host"
    lease_ttl: float = 120.0
    process_ttl: float = 600.0
    redis_replicas: int = -1  # replicas a page's links must reach (WAIT) before it is completed; -1: what Redis has


@dataclass(frozen=True, slots=True)
class OutputOptions:
    """What a crawl writes: WARC, its own JSONL, and the sinks items and records also go to."""

    warc: bool = True
    warc_max_bytes: int = 1024 * 1024 * 1024
    jsonl: bool = True
    jsonl_chunk: int = 10_000
    items_to: tuple[str, ...] = ()
    records_to: tuple[str, ...] = ()
    encrypt_to: tuple[str, ...] = ()  # age public keys: the files under --out are encrypted to them
    chunks_to: tuple[str, ...] = ()
    changes_to: tuple[str, ...] = ()
    on_change: str = ""  # a shell command run per change row


@dataclass(frozen=True, slots=True)
class ExtractionOptions:
    extract: str = ""  # rules file (.toml) or Python callback (module:function); built in each parser
    spider: str = ""  # a webtrawl.extract.Spider subclass (module:Class); built in each parser, instead of extract
    spider_arg: tuple[str, ...] = ()  # NAME=VALUE: attributes the spider is built with (Scrapy's -a)
    text: bool = False
    markdown: bool = False
    chunks: int = 0  # --chunks SIZE: the Markdown cut into chunks of at most SIZE characters (0: off)
    changes: bool = False  # --changes: change rows for recrawled pages (needs --recrawl-after)
    changes_links: bool = False  # --changes-links: a page's set of links changing is a change too (needs --changes)
    text_exclude: tuple[str, ...] = ()  # CSS selectors of elements left out of the main text (ads, dates)
    scrub_pii: bool = False
    extract_timeout: float = 5.0
    text_max_bytes: int = 2 * 1024 * 1024

    def enabled(self) -> bool:
        """Whether parsers run the extraction stage (items and/or main text); without it they never load it."""
        return self.extracts_items() or self.main_text()

    def main_text(self) -> bool:
        """Whether pages get their main text extracted (--text, --markdown, --chunks, --changes)."""
        return self.text or self.markdown or self.chunks > 0 or self.changes

    def extracts_items(self) -> bool:
        """Whether the crawl has items: an --extract rules file or callback, or a --spider."""
        return bool(self.extract or self.spider)


@dataclass(frozen=True, slots=True)
class RenderOptions:
    render: str = "never"  # never | always | auto: which pages a browser renders (fetch/render/)
    render_include: tuple[str, ...] = ()
    renderers: int = 0  # pages rendered at once per fetcher process (0: 1 when rendering is on)
    chromium: Path | None = None
    render_allow_hosts: tuple[str, ...] = ()
    render_max_requests: int = 50
    render_scrolls: int = 0
    render_timeout: float = 30.0
    render_pages_per_browser: int = 100
    render_max_memory: int = 1024**3
    render_page_memory: int = 512  # MiB of JavaScript heap one rendered page may use (0: Chromium's own limit)
    render_resources: tuple[str, ...] = ()

    def enabled(self) -> bool:
        """Whether any page may be rendered in a browser (then each fetcher process owns one Chromium)."""
        return self.render != "never" or bool(self.render_include)

    def effective_renderers(self) -> int:
        return (self.renderers or 1) if self.enabled() else 0


@dataclass(frozen=True, slots=True)
class OperationsOptions:
    """Running a crawl: progress, dashboard, logs, alerts, metrics and the memory bound."""

    progress: str = "auto"
    max_memory: int = 0
    metrics_port: int = 0
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


@dataclass(frozen=True, slots=True)
class CrawlConfig:
    """All options, by group; built by :func:`load` (or :meth:`with_options`), never changed afterwards."""

    crawl: CrawlOptions = field(default_factory=CrawlOptions)
    fetch: FetchOptions = field(default_factory=FetchOptions)
    politeness: Politeness = field(default_factory=Politeness)
    limits: Limits = field(default_factory=Limits)
    discovery: DiscoveryOptions = field(default_factory=DiscoveryOptions)
    frontier: FrontierOptions = field(default_factory=FrontierOptions)
    output: OutputOptions = field(default_factory=OutputOptions)
    extraction: ExtractionOptions = field(default_factory=ExtractionOptions)
    rendering: RenderOptions = field(default_factory=RenderOptions)
    operations: OperationsOptions = field(default_factory=OperationsOptions)
    given: frozenset[str] = frozenset()  # the options a flag, variable or TOML key set (not a default, not saved)

    def with_options(self, **values: Any) -> CrawlConfig:
        """A copy with options changed by their (flat) names, e.g. ``cfg.with_options(node_id="n1", delay=0.5)``;
        values are already typed (lists become tuples) and not checked: :func:`load` parses and checks."""
        cfg = self
        for name, value in values.items():
            path = _PATHS.get(name)
            if path is None:
                raise ConfigError(f"unknown option {name!r}")
            cfg = _replaced(cfg, path.split("."), tuple(value) if isinstance(value, list) else value)
        return cfg


_PATHS = {opt.name: opt.path for opt in OPTIONS} | {"seeds": "crawl.seeds"}


def _replaced(obj: Any, parts: list[str], value: Any) -> Any:
    if len(parts) > 1:
        value = _replaced(getattr(obj, parts[0]), parts[1:], value)
    return dataclasses.replace(obj, **{parts[0]: value})


def option_value(cfg: CrawlConfig, opt: Option) -> Any:
    """The value of one option, found by its path (``fetch.timeouts.connect``)."""
    obj: Any = cfg
    for part in opt.path.split("."):
        obj = getattr(obj, part)
    return obj


def _parsed(opt: Option, raw: Any, source: str, note: str = "") -> Any:
    """One option's raw value read; a bad one is one line naming the option (as its source spells it) and the
    value, e.g. ``--max-pages: not a whole number: 'abc'``."""
    try:
        if opt.repeat:
            items = raw if isinstance(raw, list | tuple) else [raw]
            return [opt.parse(text_only(item)) for item in items]
        return opt.parse(text_only(raw))
    except ConfigError:
        raise  # already one line naming the option (a proxy or sink URL's own check)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{source}: {exc}{note}") from None


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
    """The options as a flat JSON-able dict by option name (what a crawl stores so that a resume uses the same
    settings; flat, so that crawls saved before the options were grouped still load)."""
    saved: dict[str, Any] = {}
    for opt in OPTIONS:
        value = option_value(cfg, opt)
        if isinstance(value, Path):
            value = str(value)
        elif isinstance(value, tuple):
            value = list(value)
        if value is not None:
            saved[opt.name] = value
    return saved


def _read_toml(config_file: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(config_file.read_bytes().decode("utf-8"))  # TOML is UTF-8, whatever the locale
    except OSError as exc:
        raise ConfigError(f"cannot read config file {config_file}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start]
        raise ConfigError(f"{config_file}: not UTF-8 text: byte {bad:#04x} at offset {exc.start}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{config_file}: not valid TOML: {exc}") from None


_SAVED = "saved crawl settings"


def load(
    flags: Mapping[str, Any] | None = None,
    *,
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
    seeds: Iterable[str] = (),
    saved: Mapping[str, Any] | None = None,
) -> CrawlConfig:
    """Build the config from its layers: defaults < saved (resume) < TOML < env < flags.

    Only the layers given are read: no ``./trawl.toml`` and no ``TRAWL_*`` variables unless the caller passes them
    (``config_file=``, ``env=os.environ``), so an application embedding the crawler gets what it asked for.
    Raises :class:`ConfigError` with a one-line message.
    """
    # The raw value of each option from the highest layer that sets it, then each read once: a saved setting a
    # flag replaces is never read (a resume can fix a value an older version let through).
    raws: dict[str, tuple[Any, str]] = {}
    for key, raw in (saved or {}).items():
        if key in BY_NAME:
            raws[key] = (raw, _SAVED)
    if config_file is not None:
        for key, raw in _read_toml(config_file).items():
            opt = BY_NAME.get(key.replace("-", "_"))
            if opt is None:
                raise ConfigError(f"{config_file}: unknown option {key!r}")
            raws[opt.name] = (raw, f"{config_file}: {key}")
    if env is not None:
        warn_unknown_env(env)
    for opt in OPTIONS:
        if env is not None and opt.env in env:
            raw_env: Any = env_list(opt.parse, env[opt.env]) if opt.repeat else env[opt.env]
            raws[opt.name] = (raw_env, opt.env)
    for name, raw in (flags or {}).items():
        if raw is not None and name in BY_NAME:
            raws[name] = (raw, BY_NAME[name].flag)
    for one, other in (("extract", "spider"), ("spider", "extract")):  # one or the other: the given one replaces
        if one in raws and other in raws and raws[one][1] is not _SAVED and raws[other][1] is _SAVED:
            del raws[other]  # the other one a resumed crawl saved
    if "spider" in raws and "max_depth" not in raws:  # a spider's links are its own: no depth cap, as Scrapy's
        raws["max_depth"] = (0, "the spider's default")
    values: dict[str, Any] = {}
    for name, (raw, source) in raws.items():
        opt = BY_NAME[name]
        if source is _SAVED:
            note = f" (saved by an earlier run in crawl.json: give {opt.flag} to replace it)"
            values[name] = _parsed(opt, raw, opt.flag, note)
        else:
            values[name] = _parsed(opt, raw, source)
    given = frozenset(name for name, (_, source) in raws.items() if source is not _SAVED)
    cfg = dataclasses.replace(CrawlConfig(), given=given).with_options(**values, seeds=tuple(seeds))
    validate(cfg)
    return cfg
