"""What a node does before its children run: the output directory (writable, locked, settings saved), the checks of
user code and rendering, the seeds, and the arguments each child is started with (the option groups it uses)."""

from __future__ import annotations

import fcntl
import json
import logging
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from webtrawl.config import CrawlConfig, ExtractionOptions, option_value, to_saved
from webtrawl.errors import InputError, ScopeError
from webtrawl.fetch.args import FetcherArgs
from webtrawl.formats.canonical import CANON_VERSION
from webtrawl.frontier import FrontierSettings, RedisFrontier
from webtrawl.frontier.connect import mask_url
from webtrawl.frontier.keys import meta_key
from webtrawl.messages import NewUrl
from webtrawl.names import GIVEN_UP, counter_for
from webtrawl.node.presence import Presence
from webtrawl.node.saved import NODE_LOCK, SAVED_SETTINGS, load_saved_settings
from webtrawl.node.seeds import MAX_SEED_HOSTS, NO_SEEDS, SeedProgress, iter_seeds, seed_url, sitemap_seeds
from webtrawl.node.seedscope import SeedScope
from webtrawl.node.startreqs import SpiderStart
from webtrawl.options import BY_NAME
from webtrawl.parse.args import ParserArgs
from webtrawl.wholefile import replace_whole

if TYPE_CHECKING:
    from webtrawl.fetch.route import HintsFactory

log = logging.getLogger("webtrawl.node")

_SEED_POLL = 1.0


ROUNDS_FIELD = "recrawl_rounds"  # in the crawl's meta hash: recrawl rounds started after the first run ended
# in the meta hash too: the crawl's ``stored`` (less its given-up pages) when its current round started
ROUND_BASE_FIELD = "round_stored"


def start_round(cfg: CrawlConfig, frontier: RedisFrontier, client: Any, prefix: str) -> tuple[bool, int]:
    """Before the seeds are added: whether a page without a held copy is ``new`` in this run (--changes), and the
    URLs ended before this run that count against its --max-pages.

    The first run is the baseline however often it is stopped and resumed (Ctrl-C, kill -9): a recrawl round
    starts only with a run on a crawl whose earlier runs fetched pages and then ended their round: nothing left
    queued or leased, or --max-pages used up. It is counted in the crawl's meta hash, so a later resume of that
    round (and every later round) announces the pages it finds for the first time. With --recrawl-after,
    --max-pages is per round (a monitor capped at N pages checks N pages each round); without it, per crawl."""
    _warn_older_urls(frontier)
    counters, meta = frontier.counters(), meta_key(prefix)
    # the pages of a host that was down (fetch/giveup.py) were not fetched: they took no budget
    stored = counters.get("stored") - counters.get(GIVEN_UP)
    base = int(client.hget(meta, ROUND_BASE_FIELD) or 0)
    if cfg.discovery.recrawl_after <= 0:
        return False, stored
    capped = 0 < cfg.crawl.max_pages <= stored - base
    if counters.get("fetched") > 0 and (capped or frontier.is_finished()):
        client.hincrby(meta, ROUNDS_FIELD, 1)
        client.hset(meta, ROUND_BASE_FIELD, stored)
        base = stored
    return cfg.extraction.changes and int(client.hget(meta, ROUNDS_FIELD) or 0) > 0, stored - base


def _warn_older_urls(frontier: RedisFrontier) -> None:
    """A crawl resumed by a webtrawl that canonicalizes URLs otherwise: the URLs it queued keep their older form
    (version 2 kept a host's final dot and a link's user:password@, which aiohttp sends as Basic auth)."""
    created_by = int(frontier.meta().get("canon_version", 0))
    if created_by < CANON_VERSION:
        log.warning(
            "this crawl's URLs were canonicalized by an older webtrawl (version %d, now %d): URLs it queued then are"
            " fetched as they were queued (a host's final dot, a link's user:password@ kept); new ones are"
            " canonical. For a clean frontier, start the crawl again in a new --out",
            created_by,
            CANON_VERSION,
        )


def prepare_out(cfg: CrawlConfig, out: Path) -> IO[str]:
    """Create and lock ``out`` (the returned file holds the lock); :func:`save_settings` once Redis answers."""
    _check_resume(cfg, out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for sub in ("records", "warc"):
            (out / sub).mkdir(exist_ok=True)
        probe = out / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"output directory {out} is not writable: {exc.strerror or exc}") from None
    lock_file = (out / NODE_LOCK).open("w")
    try:
        fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock_file.close()
        raise InputError(f"another trawl process is already crawling into {out}") from None
    return lock_file


def save_settings(cfg: CrawlConfig, out: Path) -> None:
    """The settings a resume reuses (``crawl.json``), saved once the crawl's Redis answered: a first run given a
    --redis it cannot reach saves none, so the next run is not held to that URL."""
    saved = to_saved(cfg)
    saved.pop("seeds_file", None)
    if saved.get("redis"):  # no password at rest: a resume names --redis (or TRAWL_REDIS) again
        saved["redis"] = mask_url(saved["redis"])
    for sinks in ("items_to", "records_to"):  # the same for sink URLs (or use ~/.pgpass / PGPASSWORD)
        saved[sinks] = [mask_url(url) for url in saved.get(sinks, [])]
    # --header values (an Authorization, a Cookie) stay for the resume: the file is its owner's alone (0600), as
    # ~/.pgpass. Replaced whole: a second run reading it meanwhile (to say the crawl is running) read an
    # empty file written in place.
    replace_whole(out / SAVED_SETTINGS, json.dumps(saved, indent=1, sort_keys=True).encode(), mode=0o600)


def _check_resume(cfg: CrawlConfig, out: Path) -> None:
    """--recrawl-after on a crawl created without it would silently fetch nothing again: its pages never entered
    the recrawl set (only a fetch made with --recrawl-after puts a page there). The frontier's shape
    (--politeness-key, --shards) is its own once created: another value would be ignored, and saved as if not. A
    crawl in its own embedded Redis taken over by a --redis one would lose its frontier (crawl.json then names the
    other Redis). So is its seen filter (--expected-urls, --bloom-error)."""
    previous = load_saved_settings(out)
    if previous is None and not cfg.crawl.redis and (out / "redis").is_dir():  # deleted by hand, lost with a disk
        log.warning(
            "%s holds a crawl but %s, the settings it was started with, is gone: it goes on with the options given "
            "now only (an --extract, outputs, limits given before and not now are not used)",
            out,
            SAVED_SETTINGS,
        )
    if previous is not None and cfg.discovery.recrawl_after > 0 and not previous.get("recrawl_after"):
        raise InputError(
            f"{out} was crawled without --recrawl-after, so its pages are in no recrawl set and none would be "
            "fetched again: start a new crawl (another --out) with --recrawl-after"
        )
    if previous is not None and not previous.get("redis") and cfg.crawl.redis and (out / "redis").is_dir():
        raise InputError(
            f"--redis: {out} holds a crawl in its own embedded Redis ({out / 'redis'}), which a crawl in "
            f"{mask_url(cfg.crawl.redis)} would leave behind: give that one another --out (no --redis resumes this one)"
        )
    for name in _FIXED:
        was, now = (previous or {}).get(name), option_value(cfg, BY_NAME[name])
        if was is not None and was != now:
            raise InputError(
                f"{BY_NAME[name].flag}: {out} was created with {was}, and it stays: the frontier is built on it "
                f"(start a new crawl, another --out, for {now})"
            )


# options the frontier is built on when the crawl is created (the seen filter's size and rate too)
_FIXED = ("politeness_key", "shards", "expected_urls", "bloom_error")


def check_shape(cfg: CrawlConfig, meta: Mapping[str, str | int]) -> None:
    """A shared crawl's frontier is built on what it was created with (its meta in Redis): a node or ``trawl seed``
    given another value would have it ignored in silence, where a crawl of one machine refuses it (_check_resume)."""
    for name in _FIXED:
        opt = BY_NAME[name]
        was, now = meta.get(name), option_value(cfg, opt)
        if name in cfg.given and was is not None and str(was) != str(now):
            raise InputError(
                f"{opt.flag}: the crawl in Redis was created with {was}, and it stays: the frontier is built on it "
                f"(give no {opt.flag}, or start a new crawl in another Redis or database, redis://HOST:PORT/1)"
            )


def socket_dir(out: Path) -> Path:
    run = out / "run"
    if len(str(run.resolve())) < 80:
        run.mkdir(exist_ok=True)
        return run
    return Path(tempfile.mkdtemp(prefix="trawl-"))  # unix socket paths are limited to ~107 bytes


def check_components(cfg: CrawlConfig, fresh: bool) -> tuple[CrawlConfig, SpiderStart, tuple[str, ...]]:
    """User extraction code and rules fail here, once, with file and line: not in every parser later; --render
    without Chromium or Playwright too, before anything starts. The stages are imported only when used: the
    supervisor stays small (the children import their own). Returns the config with --extract and --spider made
    absolute, a spider's seeds (its start_requests(), by default its start_urls, with their routes: run now for a
    ``fresh`` crawl, whose frontier is new, so that its errors stop it before anything starts; else once its
    frontier says it has not run) and its allowed_domains."""
    start = SpiderStart()
    allowed: tuple[str, ...] = ()
    if cfg.extraction.enabled():
        from webtrawl.extract import absolute_spec, build_extraction

        ext = cfg.extraction
        cfg = cfg.with_options(extract=absolute_spec(ext.extract), spider=absolute_spec(ext.spider))
        extraction = build_extraction(cfg.extraction)
        if extraction is not None and cfg.extraction.spider:
            where = f"--spider {cfg.extraction.spider}: start_requests()"
            found = extraction.start_requests

            def requests() -> list[NewUrl]:
                return [seed_url(s.url, where, route=s.route, priority=s.priority) for s in found()]

            start = SpiderStart(requests, requests() if fresh else None)
            allowed = extraction.allowed_domains()
        if extraction is not None and cfg.discovery.recrawl_after <= 0 and extraction.sets_recrawl():
            raise InputError(
                f"{cfg.extraction.extract}: a rule's recrawl_after needs --recrawl-after (which starts rounds)"
            )
    if cfg.rendering.enabled():
        from webtrawl.fetch.render.chromium import check_rendering

        check_rendering(cfg.rendering)
    return cfg, start, allowed


def seed(
    cfg: CrawlConfig,
    start: SpiderStart,
    scope: SeedScope,
    frontier: RedisFrontier,
    stopped: Callable[[], bool],
    presence: Presence | None,
    node_stats: Callable[[], dict[str, int | float | str]],
    *,
    wait: bool,
) -> list[str]:
    """Add this run's seeds (those ``scope`` keeps: a spider's allowed_domains), the spider's start_requests() if
    no node ran it in this crawl yet; the seed hosts of the crawl (empty: a stop came while waiting for seeds)."""

    def waiting() -> bool:
        if presence is not None:
            presence.beat("waiting", node_stats())
        return stopped()

    new_seeds: list[str] = []
    sitemaps = sitemap_seeds(cfg.discovery.sitemap)
    progress = SeedProgress()
    try:
        with start.once(frontier.client, frontier.core.settings.prefix, cfg.crawl.node_id, waiting) as start_urls:
            for batch in iter_seeds([*cfg.crawl.seeds, *start_urls, *sitemaps], cfg.crawl.seeds_file):
                # Ctrl-C while a big seeds file is read (its claim on start_requests() given up); a stop before
                # the start still queues the first batch, as it queued every seed before
                if progress.read and stopped():
                    raise _SeedingStopped
                kept = scope.keep(batch)
                progress.count(len(batch), frontier.add(kept) if kept else None)
                new_seeds.extend(u.url for u in kept[: MAX_SEED_HOSTS - len(new_seeds)])
    except InputError as exc:  # a bad line far into a big seeds file: the crawl exists now, with those before it
        raise progress.failed(exc) from None
    except _SeedingStopped:
        log.warning(
            "stopped while seeding: %d seed URLs read (%d queued), the rest not; give the same seeds again to queue"
            " them (those queued are not queued twice)",
            progress.read,
            progress.added,
        )
    progress.refused()
    known = progress.seen
    if known:
        again = "; a recrawl round fetches a known page again when it is due" if cfg.discovery.recrawl_after > 0 else ""
        log.info(
            "%d seed(s) given were queued or fetched in this crawl already: not queued again%s (a seed given twice,"
            " or one the seen filter takes for seen at its false-positive rate, --bloom-error, counts too)",
            known,
            again,
        )
    frontier.count({counter_for(ScopeError.reason): scope.dropped})  # as the parsers count the links they drop
    if new_seeds:  # those queued before a stop too: a resume given no seeds scopes by them
        frontier.add_seed_hosts(new_seeds)
    if stopped():
        return []
    seeds = sorted(frontier.seed_hosts())
    scope.check(bool(seeds))
    if not seeds and wait:
        return _wait_for_seeds(cfg.crawl.node_id, frontier, stopped, presence, node_stats)
    if not seeds:
        raise InputError(NO_SEEDS)
    return seeds


class _SeedingStopped(Exception):
    """A stop came while the seeds were being queued."""


def _wait_for_seeds(
    node_id: str,
    frontier: RedisFrontier,
    stopped: Callable[[], bool],
    presence: Presence | None,
    node_stats: Callable[[], dict[str, int | float | str]],
) -> list[str]:
    """A node may start before ``trawl seed``: it waits (listed as waiting) until seeds arrive or a stop."""
    log.info("node %s: no seeds in this crawl yet; waiting for 'trawl seed'", node_id)
    while True:
        if stopped():  # 'trawl stop', or a stop signal
            return []
        if presence is not None:
            presence.beat("waiting", node_stats())
        seeds = sorted(frontier.seed_hosts())
        if seeds:
            return seeds
        time.sleep(_SEED_POLL)


def _stage_groups(cfg: CrawlConfig, settings: FrontierSettings) -> dict[str, Any]:
    """What fetchers and parsers both take: their node, the frontier's settings and the option groups they share."""
    return {
        "node_id": cfg.crawl.node_id,
        "cluster": cfg.crawl.cluster,
        "frontier": settings,
        "fetch": cfg.fetch,
        "limits": cfg.limits,
        "politeness": cfg.politeness,
        "discovery": cfg.discovery,
        "extraction": cfg.extraction,
    }


def parser_args(cfg: CrawlConfig, settings: FrontierSettings, index: int, **place: Any) -> ParserArgs:
    """A parser's arguments: its option groups and ``place`` (redis_url, socket_path, out_dir, seeds, events)."""
    return ParserArgs(index=index, output=cfg.output, **_stage_groups(cfg, settings), **place)


def fetcher_args(cfg: CrawlConfig, settings: FrontierSettings, index: int, **place: Any) -> FetcherArgs:
    """A fetcher's arguments: its option groups and ``place`` (redis_url, parser_sockets, stop, budget, stats,
    pauses)."""
    hints = _rule_hints(cfg.extraction)
    return FetcherArgs(index=index, rendering=cfg.rendering, hints=hints, **_stage_groups(cfg, settings), **place)


def _rule_hints(extraction: ExtractionOptions) -> HintsFactory | None:
    """What the fetchers build from a rules file (headers, --render auto): the extract stage's, handed to them
    because fetch does not import extract."""
    if not extraction.extract:
        return None
    from webtrawl.extract.hints import RuleHints

    return RuleHints.from_config
