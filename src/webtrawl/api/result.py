"""What :meth:`Crawler.run` returns: the crawl's counters and its stored items and page records, read from disk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any


class Stats(dict[str, int]):
    """A crawl's counters by name. A counter the crawl never counted reads 0 (``stats["items"]`` of a crawl that
    found no item): Redis holds no key for a zero. ``in`` and ``get`` still tell what was counted."""

    def __missing__(self, key: str) -> int:
        return 0


class CrawlResult:
    """One run of a crawl. ``stats`` are the whole crawl's counters when it stopped (a resumed crawl's include its
    earlier runs): ``fetched``, ``items``, ``queued``, ``err:<reason>``, ``drop:<reason>``... as ``trawl stats``
    shows them (one never counted reads 0). ``interrupted``: the run was stopped at once (a second Ctrl-C), without
    draining. ``CrawlResult("shop-crawl")`` reads a crawl back later: its stats are read from the crawl's Redis (as
    ``trawl stats --out`` reads them, live or stopped) when first asked for; ``redis``: the URL of a shared one
    whose password the crawl did not save."""

    __slots__ = ("_redis", "_stats", "interrupted", "out")

    def __init__(
        self,
        out: Path | str,
        stats: Mapping[str, int] | None = None,
        interrupted: bool = False,
        *,
        redis: str | None = None,
    ) -> None:
        self.out = Path(out).expanduser()  # a str is taken too
        self._stats = None if stats is None else Stats(stats)
        self.interrupted = interrupted
        self._redis = redis  # a crawl on a shared Redis whose password crawl.json does not keep: its URL

    def __repr__(self) -> str:
        return f"CrawlResult(out={str(self.out)!r}, interrupted={self.interrupted})"

    @property
    def stats(self) -> Stats:
        if self._stats is None:
            self._stats = _read_stats(self.out, self._redis)
        return self._stats

    def items(self, identity: Path | str | None = None) -> Iterator[dict[str, Any]]:
        """The stored items (``items/*.jsonl``): ``{"url", "fetch_time", "index", "fields"}``, read lazily. A page
        fetched again after a kill counts once (its last fetch's items), as ``trawl export`` has it. ``identity``:
        the age identity file that decrypts a crawl made with ``encrypt_to`` (as ``trawl export --identity``)."""
        return self._rows("items", identity)

    def records(self, identity: Path | str | None = None) -> Iterator[dict[str, Any]]:
        """The page records (``records/*.jsonl``): one per fetched, failed or refused URL, read lazily."""
        return self._rows("records", identity)

    def _rows(self, what: str, identity: Path | str | None) -> Iterator[dict[str, Any]]:
        """The rows of ``what``; a ``ConfigError`` now (not at the first row) if ``out`` holds no crawl."""
        check_crawl(self.out)
        return _read(self.out, what, None if identity is None else Path(identity))


def _read(out: Path, what: str, identity: Path | None) -> Iterator[dict[str, Any]]:
    if not (out / what).is_dir():
        return  # a crawl without --extract has no items; one with --no-jsonl no files at all
    from webtrawl.store.sinks.export import latest

    for lines in latest(out, what, identity):
        yield from lines


def check_crawl(out: Path) -> None:
    """A mistyped directory read as a crawl that found nothing; a crawl that has started and written nothing yet
    still reads as empty: its node lock is the first file a run makes (before Redis, before any page), and its
    settings (``crawl.json``) stay; ``items/`` or ``records/`` copied elsewhere read too."""
    from webtrawl.errors import ConfigError
    from webtrawl.node.saved import NODE_LOCK, SAVED_SETTINGS

    if any((out / name).exists() for name in (NODE_LOCK, SAVED_SETTINGS, "items", "records")):
        return
    found = f"no {NODE_LOCK}, {SAVED_SETTINGS}, items/ or records/ in it"
    found = "no such directory" if not out.exists() else found if out.is_dir() else "not a directory"
    raise ConfigError(f"{out} holds no crawl ({found}): give the out directory a crawl was run with")


def _read_stats(out: Path, redis: str | None) -> Stats:
    """The counters of the crawl in ``out``, from its Redis (``trawl stats``'s): a ``ConfigError`` if it holds none."""
    from webtrawl.errors import ConfigError, InputError
    from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
    from webtrawl.node.stats import redis_of_out

    try:
        with redis_of_out(out, redis, None) as (url, cluster):
            client = connect_sync(url, cluster=cluster)
            try:
                return Stats(RedisFrontier.open(client, FrontierSettings(), create=False).counters().values)
            finally:
                client.close()
    except ConfigError:
        raise
    except InputError as exc:
        raise ConfigError(str(exc)) from None
