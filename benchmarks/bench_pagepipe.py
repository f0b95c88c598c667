"""CPU per page of the parser's end of the page pipe (PageReceiver): the 181 corpus pages, identity HTML as the
realistic test web sends them, framed by a PageSender in another process and read until all have arrived (the
heap trimmed as in a parser; the first of two rounds per process warms up), then 10 MiB pages (the realistic web's
12 MB pages cut at the fetcher's cap), which the parser receives in 1% of its pages.

Only the receiving process's CPU is counted (the sender is a child process). Rounds alternate between this tree and
``--baseline REF`` (ABAB, fresh processes, see _abab.py); medians::

    PYTHONPATH=src:testweb/src .venv/bin/python benchmarks/bench_pagepipe.py --rounds 7 --baseline main
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_REPEAT = 10  # each corpus page is sent this many times per round
_HUGE = 20  # 10 MiB pages sent in the last round


def _send(path: str, repeat: int, huge: bool = False) -> None:
    sys.path.insert(0, str(_HERE))
    import msgspec
    from bench_warc import _DEFAULT_CORPUS, load_pages

    try:
        from webtrawl.pagesend import PageSender
    except ImportError:  # a baseline from before the split
        from webtrawl.pagepipe import PageSender  # type: ignore[attr-defined,no-redef]

    pages = load_pages(_DEFAULT_CORPUS)
    if huge:  # the realistic web's 12 MB pages, as a fetcher hands them over: cut at the 10 MiB max_body
        pages = [msgspec.structs.replace(pages[0], body=b"lorem ipsum " * (10 * 1024 * 1024 // 12), truncated=True)]

    async def run() -> None:
        sender = PageSender([Path(path)])
        for _ in range(repeat):
            for page in pages:
                await sender.send(page)
        await sender.close()

    asyncio.run(run())


def _child() -> dict[str, float]:
    from webtrawl.heap import KEEP_FREE, HeapTrimmer, trim_heap
    from webtrawl.pagepipe import PageReceiver

    with tempfile.TemporaryDirectory(prefix="bench-pipe-") as tmp:
        path = Path(tmp) / "p.sock"
        receiver = PageReceiver(path)
        result = {}
        for _round, repeat, huge in (("warm", _REPEAT, False), ("timed", _REPEAT, False), ("huge", _HUGE, True)):
            sender = multiprocessing.get_context("spawn").Process(target=_send, args=(str(path), repeat, huge))
            sender.start()
            want, got, size = (1 if huge else 181) * repeat, 0, 0
            trimmer = HeapTrimmer()
            cpu = time.process_time()
            while got < want:
                pages = receiver.poll(1.0)
                got += len(pages)
                size += sum(len(p.body) for p in pages)
                del pages
                if huge:  # a parser meets one in ~100 pages, over a second: its trimmer runs in between
                    trim_heap(KEEP_FREE)
                else:
                    trimmer.maybe_trim()  # as the parser does between batches
            cpu = time.process_time() - cpu
            sender.join()
            if huge:
                result["ms CPU/10 MiB page"] = cpu * 1000 / got
            else:
                result = {"ms CPU/page": cpu * 1000 / got, "KB/page": size / 1000 / got}
        receiver.close()
    return result


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(_HERE))
    import _abab

    return _abab.main(Path(__file__), __doc__, _child, argv, digits=4)


if __name__ == "__main__":
    raise SystemExit(main())
