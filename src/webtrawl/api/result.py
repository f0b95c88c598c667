"""What :meth:`Crawler.run` returns: the crawl's counters and its stored items and page records, read from disk."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Stats(dict[str, int]):
    """A crawl's counters by name. A counter the crawl never counted reads 0 (``stats["items"]`` of a crawl that
    found no item): Redis holds no key for a zero. ``in`` and ``get`` still tell what was counted."""

    def __missing__(self, key: str) -> int:
        return 0


@dataclass(frozen=True, slots=True)
class CrawlResult:
    """One run of a crawl. ``stats`` are the whole crawl's counters when it stopped (a resumed crawl's include its
    earlier runs): ``fetched``, ``items``, ``queued``, ``err:<reason>``, ``drop:<reason>``... as ``trawl stats``
    shows them (one never counted reads 0). ``interrupted``: the run was stopped at once (a second Ctrl-C), without
    draining."""

    out: Path  # a str is taken too
    stats: Mapping[str, int] = field(default_factory=Stats)
    interrupted: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.out, Path):  # CrawlResult("shop-crawl"), to read a crawl back later
            object.__setattr__(self, "out", Path(self.out).expanduser())
        if not isinstance(self.stats, Stats):
            object.__setattr__(self, "stats", Stats(self.stats))

    def items(self, identity: Path | str | None = None) -> Iterator[dict[str, Any]]:
        """The stored items (``items/*.jsonl``): ``{"url", "fetch_time", "index", "fields"}``, read lazily. A page
        fetched again after a kill counts once (its last fetch's items), as ``trawl export`` has it. ``identity``:
        the age identity file that decrypts a crawl made with ``encrypt_to`` (as ``trawl export --identity``)."""
        return self._rows("items", identity)

    def records(self, identity: Path | str | None = None) -> Iterator[dict[str, Any]]:
        """The page records (``records/*.jsonl``): one per fetched, failed or refused URL, read lazily."""
        return self._rows("records", identity)

    def _rows(self, what: str, identity: Path | str | None) -> Iterator[dict[str, Any]]:
        if not (self.out / what).is_dir():
            return  # a crawl without --extract has no items; one with --no-jsonl no files at all
        from webtrawl.store.sinks.export import latest

        for lines in latest(self.out, what, None if identity is None else Path(identity)):
            yield from lines
