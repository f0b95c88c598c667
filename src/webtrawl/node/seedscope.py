"""A spider's ``allowed_domains`` applied to the crawl's seeds, as Scrapy 2.11+'s offsite filter applies them to
its start requests: a seed on another host (a command-line URL, a ``--seeds`` line, one of ``start_urls`` or of
``start_requests()``) is not queued but written to ``dropped/`` with reason ``scope``, as the parsers write the
links they drop, and logged; when no seed is left the crawl stops with one error line."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import urlsplit

from webtrawl.config import CrawlConfig
from webtrawl.domains import domain_names, in_domains
from webtrawl.errors import InputError, ScopeError
from webtrawl.formats import agekey
from webtrawl.messages import NewUrl
from webtrawl.redact import redact
from webtrawl.store.base import Drop
from webtrawl.store.files import DroppedSink

log = logging.getLogger("webtrawl.node")


class SeedScope:
    """Filters batches of seeds; the dropped ones go to ``dropped/<node>-seeds-NNNNN.jsonl``."""

    def __init__(self, cfg: CrawlConfig, out: Path, allowed_domains: Iterable[str]) -> None:
        self.domains = domain_names(allowed_domains)
        self._cfg, self._out = cfg, out
        self._sink: DroppedSink | None = None
        self.dropped = 0
        self.kept = 0

    def keep(self, batch: list[NewUrl]) -> list[NewUrl]:
        """The seeds of ``batch`` on the allowed domains (all of them with none); the others written as dropped."""
        if not self.domains:
            return batch
        kept: list[NewUrl] = []
        off: list[NewUrl] = []
        for url in batch:
            (kept if in_domains(urlsplit(url.url).hostname or "", self.domains) else off).append(url)
        self.kept += len(kept)
        if off:
            self._write([Drop(url.url, ScopeError.reason, "", 0) for url in off])
            first = redact(off[0].url)
            log.warning("%d seed(s) outside the spider's allowed_domains not crawled (first: %s)", len(off), first)
        return kept

    def check(self, any_seed: bool) -> None:
        """Close the dropped file; :class:`InputError` when every seed was dropped and the crawl has none."""
        if self._sink is not None:
            self._sink.commit()
            self._sink.close()
            self._sink = None
        if self.dropped and not self.kept and not any_seed:
            raise InputError(
                f"every seed ({self.dropped}) is outside the spider's allowed_domains ({', '.join(self.domains)}): "
                "give seeds on those domains, or add their domains to allowed_domains"
            )

    def _write(self, drops: list[Drop]) -> None:
        if self._sink is None:
            output = self._cfg.output
            prefix = f"{self._cfg.crawl.node_id}-seeds"
            recipients = agekey.recipients(output.encrypt_to)
            self._sink = DroppedSink(self._out / "dropped", prefix, output.jsonl_chunk, recipients=recipients)
        self._sink.write_drops(drops)
        self.dropped += len(drops)
