"""The one place a parser hands its outputs to: every sink writes the batch, then every sink flushes it.

An output that cannot take the batch for now waits instead of failing: a full disk (``ENOSPC``, ``EDQUOT``,
``EFBIG``; the file sinks cut a failed write back to the last whole record) or a destination that is away
(:class:`~webtrawl.errors.SinkUnavailable`). The fan-out logs one clear line, raises the node's pause flag (the
fetchers stop leasing), sleeps and calls the sink again with the same batch until it goes through. Nothing after
that call happens meanwhile, in particular no URL of the batch is completed, so an output that is not durable is
never marked done. Anything else a sink raises (a bug in a user's sink, a row its destination refuses) is
:class:`~webtrawl.errors.SinkFailed`: the node stops at once naming it, and the batch is redone on resume.
"""

from __future__ import annotations

import functools
import logging
import multiprocessing.synchronize
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from webtrawl.errors import SinkFailed, SinkUnavailable, StateError, WebtrawlError, no_room, raised_at
from webtrawl.store.base import Drop, PageOutput, Sink
from webtrawl.store.batchlog import Mark, Marked

log = logging.getLogger("webtrawl.store")


@runtime_checkable
class DropSink(Protocol):
    """A sink that also takes the links the frontier refused (they come after the batch's links were added)."""

    def write_drops(self, drops: Sequence[Drop]) -> None: ...


class FanOut:
    """All outputs of one parser process, written in order, each write waiting out a full disk or an outage."""

    def __init__(
        self,
        sinks: Sequence[Sink],
        *,
        pause: multiprocessing.synchronize.Event | None = None,
        retry_s: float = 2.0,
        streams: set[str] | None = None,
    ) -> None:
        self.sinks = list(sinks)
        self._marked = [sink for sink in self.sinks if isinstance(sink, Marked)]  # file sinks (the batch log)
        self.streams = frozenset(streams or ())  # the streams the sinks hold ("warc", "records", ...)
        self._pause = pause
        self._retry_s = retry_s
        self._waiting: str | None = None  # what the last failed call waited for, until it goes through

    def write(self, batch: Sequence[PageOutput]) -> None:
        """Every sink writes ``batch``, then every sink flushes it; returns when all of it is durable."""
        if not batch:
            return
        for sink in self.sinks:
            self._retry(sink.name, functools.partial(sink.write, batch))
        for sink in self.sinks:
            self._retry(sink.name, sink.flush)

    def write_drops(self, drops: Sequence[Drop]) -> None:
        """Links refused after the batch was stored (by the frontier), to every sink that keeps dropped links."""
        if not drops:
            return
        for sink in self.sinks:
            if isinstance(sink, DropSink):
                self._retry(sink.name, functools.partial(sink.write_drops, drops))
                self._retry(sink.name, sink.flush)

    def durably(self, name: str, call: Callable[[], None]) -> None:
        """Run a write of the parser's own (its batch log) as a sink's: a full disk is waited out, crawl paused."""
        self._retry(name, call)

    def marks(self) -> list[Mark]:
        """Where every file output stands, for the batch log's ``Begin`` (sinks without files have none)."""
        return [mark for sink in self._marked for mark in sink.marks()]

    def commit(self) -> None:
        """The batch is completed: the files that filled during it may be sealed."""
        for sink in self._marked:
            sink.commit()

    def close(self) -> None:
        """Close every sink. One that fails is one ERROR line, not a parser's traceback: every batch it took was
        flushed (durable) before its URLs were completed, so its rows are in; the other sinks are still closed,
        and the parser still ends as usual (its batch log, a spider's ``closed``)."""
        for sink in self.sinks:
            try:
                sink.close()
            except Exception as exc:
                log.error(
                    "output %s: closing it failed: %s: %s (the rows of every batch it flushed are kept)",
                    sink.name,
                    type(exc).__name__,
                    exc,
                )

    def _retry(self, name: str, call: Callable[[], None]) -> None:
        while True:
            try:
                call()
            except OSError as exc:
                if not no_room(exc):
                    raise
                self._wait(
                    "disk full: cannot write to %s (%s); crawl paused, retrying every %gs until space is freed",
                    name,
                    exc.strerror or exc,
                    "disk space is back: writing to %s again, crawl resumes",
                )
                continue
            except SinkUnavailable as exc:
                self._wait(
                    "output %s unavailable (%s); crawl paused, retrying every %gs",
                    name,
                    exc,
                    "output %s is back, crawl resumes",
                )
                continue
            except StateError:  # the crawl's Redis away (a sink's column types): a restart outlives it
                raise
            except Exception as exc:
                raise _failed(name, exc) from None
            if self._waiting is not None:
                log.warning(self._waiting, name)
                self._waiting = None
                if self._pause is not None:
                    self._pause.clear()
            return

    def _wait(self, message: str, name: str, why: object, back: str) -> None:
        if self._waiting is None:
            log.error(message, name, why, self._retry_s)
            self._waiting = back
        if self._pause is not None:
            self._pause.set()
        time.sleep(self._retry_s)


def _failed(name: str, exc: Exception) -> SinkFailed:
    """The one line a sink's failure stops the node with; a bug's traceback is logged once, for its author."""
    if isinstance(exc, WebtrawlError):  # the sink's own words for users (a row over the server's limit)
        return SinkFailed(str(exc))
    where = f" ({place})" if (place := raised_at(exc)) else ""
    log.error("output %s failed:\n%s", name, "".join(traceback.format_exception(exc)).rstrip())
    return SinkFailed(
        f"output {name} failed: {type(exc).__name__}: {exc}{where}; the batch it failed on was not completed, so"
        " nothing is lost: fix the sink, then resume the crawl"
    )
