"""Seed URLs from the command line and from a file, streamed in batches and validated with line numbers."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from webtrawl.errors import BadUrl, InputError, SchemeError
from webtrawl.formats import canonicalize
from webtrawl.formats.canonical import has_userinfo
from webtrawl.formats.route import SITEMAP_ROUTE
from webtrawl.messages import NewUrl
from webtrawl.redact import redact

if TYPE_CHECKING:
    from webtrawl.config import CrawlConfig
    from webtrawl.frontier.base import AddResult

log = logging.getLogger("webtrawl.node")

SEED_LOG_EVERY_S = 5.0  # a seeds file of millions of URLs takes minutes to queue: a progress line this often

# The first seed URLs of a crawl are stored as its seed hosts, for the host/domain scope; a seed file of millions of
# URLs keeps its first ones, as 'trawl crawl' and 'trawl seed' both do.
MAX_SEED_HOSTS = 10_000


def _lines(path: Path) -> Iterator[tuple[str, int, str]]:
    """(file name, line number, line) of a seeds file read as bytes, each line decoded as UTF-8: a byte that is not
    UTF-8 stops with its file and byte offset (a text stream's error would not say where). A byte order mark before
    the first line is none of it (a file saved by Notepad or exported by Excel starts with one)."""
    stream: BinaryIO
    if str(path) == "-":
        stream, name = sys.stdin.buffer, "<stdin>"
    else:
        try:
            stream = path.open("rb")
        except OSError as exc:
            raise InputError(f"cannot read seeds file {path}: {exc.strerror or exc}") from None
        name = str(path)
    offset = 0
    try:
        for number, raw in enumerate(stream, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad, at = raw[exc.start], offset + exc.start
                raise InputError(f"{name}: not UTF-8 text: byte {bad:#04x} at offset {at} (line {number})") from None
            offset += len(raw)
            yield name, number, line.removeprefix("\ufeff") if number == 1 else line  # Notepad's, Excel's BOM
    except OSError as exc:
        raise InputError(f"cannot read seeds file {name}: {exc.strerror or exc}") from None
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()


def seed_url(text: str, where: str, *, route: str = "", priority: int = -1) -> NewUrl:
    """A seed as the frontier takes it (canonical, depth 0); :class:`InputError` saying ``where`` it came from."""
    candidate = text.strip()
    try:
        url = canonicalize(candidate)
    except (BadUrl, SchemeError) as exc:
        hint = ""
        if "://" not in candidate and "." in candidate.partition("/")[0]:  # example.com, www.example.com/news
            hint = f"; did you mean https://{redact(candidate)}?"
        raise InputError(f"{where}: not an http(s) URL: {redact(candidate)!r} ({exc}){hint}") from None
    if has_userinfo(candidate):  # canonicalize drops it: crawling without the auth asked for would be a surprise
        raise InputError(
            f"{where}: {redact(candidate)!r} names a user name or password, which webtrawl never sends or stores:"
            " give the site's Authorization header as a rules file's headers (its URLs only) or --header (all)"
        )
    return NewUrl(url, depth=0, priority=priority, route=route)


_LIMITS = {"budget": "--host-budget", "host-queue-cap": "--host-queue-cap", "frontier-cap": "--frontier-cap"}


class SeedProgress:
    """The URLs of a seeding read and queued so far, logged every :data:`SEED_LOG_EVERY_S` seconds, so a seeds file
    of millions of lines does not keep the node (or ``trawl seed``) silent for minutes."""

    def __init__(self) -> None:
        self.read = 0
        self.added = 0
        self.seen = 0
        self.dropped: dict[str, int] = {}  # reason (budget, host-queue-cap, frontier-cap) -> seeds the frontier refused
        self._logged = time.monotonic()

    def count(self, read: int, result: AddResult | None) -> None:
        """``read`` seeds, of which the frontier took what ``result`` says (None: it was given none of them)."""
        self.read += read
        if result is not None:
            self.added += result.added
            self.seen += result.seen
            for reason, n in result.dropped.items():
                self.dropped[reason] = self.dropped.get(reason, 0) + n
        now = time.monotonic()
        if now - self._logged >= SEED_LOG_EVERY_S:
            self._logged = now
            log.info("seeded %d URLs so far (%d new)", self.read, self.added)

    def refused(self) -> None:
        """One WARNING for the seeds the frontier refused (a seeds file of one site past --host-budget): not queued,
        and in no dropped/ file, only counted."""
        if self.dropped:
            reasons = ", ".join(
                f"{n} {reason} ({_LIMITS.get(reason, '')})" for reason, n in sorted(self.dropped.items())
            )
            log.warning("%d seed(s) not queued, refused by the frontier: %s", sum(self.dropped.values()), reasons)

    def failed(self, exc: InputError) -> InputError:
        """``exc`` (a bad line far into a big seeds file) saying that the crawl holds the seeds queued before it."""
        if not self.read:
            return exc
        return InputError(
            f"{exc} (the first {self.read} seed URLs are queued: give the seeds again, fixed, to queue the rest;"
            " those queued are not queued twice)"
        )


def sitemap_seeds(urls: Iterable[str]) -> list[NewUrl]:
    """``--sitemap`` URLs as seeds marked as sitemaps (so a text sitemap is read as one, parse/sitemap.py)."""
    return [seed_url(url, "--sitemap", route=SITEMAP_ROUTE) for url in urls]


def iter_seeds(urls: Iterable[str | NewUrl], path: Path | None, batch: int = 1000) -> Iterator[list[NewUrl]]:
    """Batches of canonical seed URLs (``urls`` made by :func:`seed_url` already pass as they are); blank lines and
    ``#`` comments in the file are skipped.

    Streaming keeps memory flat for seed files of any size; an invalid line stops with its line number.
    """
    out: list[NewUrl] = []
    for url in urls:
        out.append(url if isinstance(url, NewUrl) else seed_url(url, "seed"))
    if path is not None:
        for name, number, line in _lines(path):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            out.append(seed_url(stripped, f"{name}:{number}"))
            if len(out) >= batch:
                yield out
                out = []
    if out:
        yield out


def new_crawl(cfg: CrawlConfig) -> bool:
    """Whether ``cfg`` starts a new crawl on a new Redis of its own (no ``--redis``, none in ``--out`` yet): a
    frontier that holds nothing, so its seeds are only what this run brings."""
    out = cfg.crawl.out
    return not cfg.crawl.redis and out is not None and not (out / "redis").exists()


def check_seeds(cfg: CrawlConfig, spider_seeds: bool) -> None:
    """A new crawl given nothing to start from, or a seed URL (or ``--sitemap``) it refuses, stops now, before its
    directory and Redis exist (a seeds file is read as it streams in). Resuming one (its Redis in ``--out``) and
    joining a shared one (``--redis``, where ``trawl seed`` or another node brings seeds) need none;
    ``spider_seeds``: a spider's start_urls (or start_requests()) may bring some."""
    crawl = cfg.crawl
    if new_crawl(cfg) and not (crawl.seeds or crawl.seeds_file or cfg.discovery.sitemap or spider_seeds):
        _check_extract(cfg.extraction.extract)
        raise InputError(NO_SEEDS)
    for url in crawl.seeds:  # a bad one given on the command line (or to Crawler(urls=...)) too
        seed_url(url, "seed")
    sitemap_seeds(cfg.discovery.sitemap)


def _check_extract(spec: str) -> None:
    """A spider given as ``--extract`` (``Crawler("shop.py:Shop")``) says to give it as ``--spider``, not that the
    crawl has no seeds (its start_urls were not looked for)."""
    from webtrawl.extract.callback import is_callback_spec, load_callback

    if spec and is_callback_spec(spec) and not Path(spec).is_file():
        load_callback(spec)


NO_SEEDS = (
    "no seeds: give URLs, --seeds FILE, --sitemap URL, a --spider with start_urls, or --out of an existing crawl "
    "to resume"
)
