"""CPU per page of the parser's end of the page pipe (PageReceiver): the 181 corpus pages, identity HTML as the
realistic test web sends them, framed by a PageSender in another process and read until all have arrived (the
heap trimmed as in a parser; the first of two rounds per process warms up).

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


def _send(path: str, repeat: int) -> None:
    sys.path.insert(0, str(_HERE))
    from bench_warc import _DEFAULT_CORPUS, load_pages

    from webtrawl.pagepipe import PageSender

    pages = load_pages(_DEFAULT_CORPUS)

    async def run() -> None:
        sender = PageSender([Path(path)])
        for _ in range(repeat):
            for page in pages:
                await sender.send(page)
        await sender.close()

    asyncio.run(run())


def _child() -> dict[str, float]:
    from webtrawl.heap import HeapTrimmer
    from webtrawl.pagepipe import PageReceiver

    with tempfile.TemporaryDirectory(prefix="bench-pipe-") as tmp:
        path = Path(tmp) / "p.sock"
        receiver = PageReceiver(path)
        result = {}
        for _round in ("warm", "timed"):
            sender = multiprocessing.get_context("spawn").Process(target=_send, args=(str(path), _REPEAT))
            sender.start()
            want, got, size = 181 * _REPEAT, 0, 0
            trimmer = HeapTrimmer()
            cpu = time.process_time()
            while got < want:
                pages = receiver.poll(1.0)
                got += len(pages)
                size += sum(len(p.body) for p in pages)
                del pages
                trimmer.maybe_trim()  # as the parser does between batches
            cpu = time.process_time() - cpu
            sender.join()
            result = {"ms CPU/page": cpu * 1000 / got, "KB/page": size / 1000 / got}
        receiver.close()
    return result


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(_HERE))
    import _abab

    return _abab.main(Path(__file__), __doc__, _child, argv, digits=4)


if __name__ == "__main__":
    raise SystemExit(main())
