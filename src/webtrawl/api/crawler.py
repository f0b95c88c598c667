"""``webtrawl.Crawler``: a crawl started from Python, the layer ``trawl crawl`` itself is built on.

A crawl is the same node the command line runs (a supervisor in the calling process, fetcher and parser processes,
the embedded Redis unless ``redis=`` names one), configured from keywords instead of flags and nothing else: no
``./trawl.toml``, no ``TRAWL_*`` variables. Embedded in another program it touches no signal handler unless it runs
on the main thread (then it restores them), and leaves the program's logging alone unless asked.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webtrawl.api.options import crawl_config, option_flags, seed_urls
from webtrawl.api.result import CrawlResult, Stats
from webtrawl.api.target import check_main_guard, check_not_reimported, target_options
from webtrawl.errors import ConfigError

if TYPE_CHECKING:
    from webtrawl.config import CrawlConfig
    from webtrawl.node.supervisor import Node

_INTERRUPTED = 130  # the node's status after a second Ctrl-C: quit at once (leases are taken back next time)


class Crawler:
    """A crawl into ``out``; ``target`` says what to extract: a ``Spider`` subclass, a function taking a page, a
    ``"module:function"`` string or a rules file (``.toml``); None only archives (WARC and page records).

    ``urls`` are seed URLs (a Spider's ``start_urls`` are its own seeds). ``options`` are the crawl options under
    their flag names with ``_`` for ``-`` (``delay=2.0``, ``max_pages=100``, ``ip_allow=["127.0.0.0/8"]``,
    ``ports=[8080]``, ``resolve=["*.test=127.0.0.1"]``, ``items_to=["sqlite:///items.db"]``...), checked here: a bad
    one raises :class:`webtrawl.ConfigError` (a ``ValueError``) with the command line's message. ``progress``
    defaults to ``"log"`` (lines through :mod:`logging`, under ``webtrawl``). ``configure_logging=True`` makes the
    crawl set up the process's logging as ``trawl`` does (stderr and ``<out>/logs/trawl.log``).

    Running the same ``out`` again resumes the crawl, with the settings it saved there under the ones given.
    """

    def __init__(
        self,
        target: object = None,
        /,
        *,
        out: str | Path,
        urls: Iterable[str] | str | None = (),
        configure_logging: bool = False,
        **options: Any,
    ) -> None:
        check_not_reimported()
        check_main_guard()  # here too: arun() and a thread's run() do not see the script's frame
        flags = option_flags(options, target)
        named = target_options(target)
        if named and (flags.get("extract") or flags.get("spider")):
            raise ConfigError("give what to extract once: as the target, or as extract= (spider=), not both")
        flags.update(named)
        flags["out"] = out
        flags.setdefault("progress", "log")
        self._setup(crawl_config(flags, seeds=seed_urls(urls)), configure_logging)

    @classmethod
    def from_config(cls, config: CrawlConfig, *, configure_logging: bool = False) -> Crawler:
        """A crawl of a configuration built by :func:`webtrawl.config.load` (what ``trawl crawl`` does)."""
        crawler = cls.__new__(cls)
        crawler._setup(config, configure_logging)
        return crawler

    def _setup(self, config: CrawlConfig, configure_logging: bool) -> None:
        self.config = config
        self.configure_logging = configure_logging
        self._lock = threading.Lock()
        self._node: Node | None = None
        self._stop = False

    @property
    def out(self) -> Path:
        assert self.config.crawl.out is not None  # crawl_config requires it
        return self.config.crawl.out

    def run(self) -> CrawlResult:
        """Crawl until the crawl ends (nothing left, ``max_pages``, ``max_time``, :meth:`stop` or Ctrl-C on the main
        thread); the run's result, its items on disk."""
        check_main_guard()
        from webtrawl.node.seeds import check_seeds

        # no seed at all: before the fork server, the directory and Redis start (a spider's start_urls are known
        # once it is built, in Node.run: still before the directory and Redis)
        check_seeds(self.config, spider_seeds=bool(self.config.extraction.spider))
        from webtrawl.node.children import prestart

        prestart()  # the children's stages load while the supervisor's do
        from webtrawl.node.supervisor import Node

        node = Node(self.config, configure_logging=self.configure_logging)
        with self._lock:
            self._node = node
            if self._stop:
                node.stop_leasing.set()
        try:
            status = node.run()
        finally:
            with self._lock:
                self._node, self._stop = None, False  # a later run() starts afresh (and resumes)
        stats = Stats(node.counters.values) if node.counters is not None else Stats()
        return CrawlResult(self.out, stats, interrupted=status == _INTERRUPTED)

    def stop(self) -> None:
        """Ask a running crawl (from another thread) to stop as Ctrl-C does: in-flight pages are finished and
        stored, :meth:`run` returns. Before it starts: it will stop at once (its leftover work stays queued)."""
        with self._lock:
            self._stop = True
            if self._node is not None:
                self._node.stop_leasing.set()

    async def arun(self) -> CrawlResult:
        """:meth:`run` from asyncio: the crawl runs in a thread of its own, the event loop goes on. Cancelling the
        task stops the crawl as :meth:`stop` does, and waits for it to finish its in-flight pages."""
        check_main_guard()  # on the loop's thread, where the script's own frame is (the crawl's thread has none)
        loop = asyncio.get_running_loop()
        done: asyncio.Future[CrawlResult] = loop.create_future()

        def settle(outcome: CrawlResult | BaseException) -> None:
            if done.cancelled():
                return
            if isinstance(outcome, BaseException):
                done.set_exception(outcome)
            else:
                done.set_result(outcome)

        def work() -> None:
            outcome: CrawlResult | BaseException
            try:
                outcome = self.run()
            except BaseException as exc:  # handed to the awaiting task, not lost in this thread
                outcome = exc
            loop.call_soon_threadsafe(settle, outcome)

        thread = threading.Thread(target=work, name="webtrawl-crawl", daemon=False)
        thread.start()
        try:
            return await asyncio.shield(done)
        except asyncio.CancelledError:
            self.stop()
            await asyncio.to_thread(thread.join)
            raise
