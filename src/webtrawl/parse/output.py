"""The parser's writers (JSONL records, WARC, dropped links) and the one rule they share: a full disk waits.

A write that fails because the disk (or quota, or file-size limit) is full is cut back by the writer to the last
whole record, so it can simply be tried again: the parser logs one clear line, raises the node's pause flag (the
fetchers stop leasing), sleeps and retries until the write goes through. Nothing after that write happens
meanwhile, in particular no URL of the batch is completed, so a record that is not on disk is never marked done.

Dropped links go to ``<out>/dropped/<node>-p<i>-NNNNN.jsonl``, one line per distinct (URL, reason) this parser
drops: ``{"url", "reason", "parent", "depth"}``. Together with the records this accounts for every URL a crawl
discovers: each one is either fetched or failed with its reason (``records/``) or not followed with its reason
(``dropped/``). The counters count every occurrence; the stream skips repeats a bounded LRU has already seen (a
link on every page of a site is one line, not thousands), so its cost stays proportional to distinct URLs.
"""

from __future__ import annotations

import errno
import functools
import logging
import multiprocessing.synchronize
import time
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from webtrawl.messages import Page
from webtrawl.parse.process import Processed
from webtrawl.store import JsonlWriter, WarcWriter

log = logging.getLogger("webtrawl.parse")

DROPPED_DIR = "dropped"
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_DEDUP = 65_536
_T = TypeVar("_T")


class Output:
    def __init__(
        self,
        out_dir: Path,
        prefix: str,
        *,
        chunk: int,
        warc_max_bytes: int | None,
        pause: multiprocessing.synchronize.Event | None = None,
        retry_s: float = 2.0,
    ) -> None:
        self.records = JsonlWriter(out_dir / "records", prefix, chunk)
        self.warc = WarcWriter(out_dir / "warc", prefix, warc_max_bytes) if warc_max_bytes else None
        self.dropped = JsonlWriter(out_dir / DROPPED_DIR, prefix, chunk)
        self._pause = pause
        self._retry_s = retry_s
        self._recent: OrderedDict[tuple[str, str], None] = OrderedDict()
        self._waiting = False

    def store(self, page: Page, out: Processed) -> None:
        """WARC (if wanted), then the record, then the page's dropped links; returns when all are on disk."""
        if self.warc is not None and out.warc:
            warc = self.warc
            self._retry(lambda: warc.write(page, out.record), warc.directory)
            out.counters["warc"] = out.counters.get("warc", 0) + 1
        self.record(out.record)
        out.counters["stored"] = out.counters.get("stored", 0) + 1
        depth = page.lease.depth + (0 if out.record.get("redirect") else 1)
        parent = page.lease.url
        self.drop_many([(url, reason, parent, depth) for url, reason in out.dropped])

    def record(self, record: dict[str, Any]) -> None:
        self._retry(lambda: self.records.write(record), self.records.directory)

    def drop_many(self, drops: list[tuple[str, str, str, int]]) -> None:
        """Lines for the (url, reason, parent, depth) the LRU has not seen lately, written together."""
        recent = self._recent
        lines = []
        for url, reason, parent, depth in drops:
            key = (url, reason)
            if key in recent:
                recent.move_to_end(key)
                continue
            recent[key] = None
            lines.append({"url": url, "reason": reason, "parent": parent, "depth": depth})
        while len(recent) > _DEDUP:
            recent.popitem(last=False)
        while lines:  # one write per chunk file the lines span
            lines = lines[self._retry(functools.partial(self.dropped.write_some, lines), self.dropped.directory) :]

    def close(self) -> None:
        for writer in (self.records, self.warc, self.dropped):
            if writer is not None:
                writer.close()

    def _retry(self, write: Callable[[], _T], directory: Path) -> _T:
        while True:
            try:
                result = write()
            except OSError as exc:
                if exc.errno not in _FULL:
                    raise
                if not self._waiting:
                    log.error(
                        "disk full: cannot write to %s (%s); crawl paused, retrying every %gs until space is freed",
                        directory,
                        exc.strerror or exc,
                        self._retry_s,
                    )
                    self._waiting = True
                if self._pause is not None:
                    self._pause.set()
                time.sleep(self._retry_s)
                continue
            if self._waiting:
                log.warning("disk space is back: writing to %s again, crawl resumes", directory)
                self._waiting = False
                if self._pause is not None:
                    self._pause.clear()
            return result
