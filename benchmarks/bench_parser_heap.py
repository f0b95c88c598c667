"""A parser's page stream in one process: CPU, page faults and RSS per page with its big pages among the others.

bench_parse_cost.py times each kind of page on its own, after a trim; what it cannot show is how they meet in one
heap: 1 page in 100 of the realistic web is a 12 MB page (a 10 MiB body) and 1 in 100 a gzip bomb, the ordinary
pages between them, and a parser's heap trimmer (heap.HeapTrimmer: every 0.5 s, some 64 pages at a parser's rate)
gives back every free page when more than KEEP_FREE is free. Here one process gets that stream as a parser does:
each frame read through the parser's own ``_Inbox`` (as PageReceiver's ``recv_into`` fills it), ``process_page``
and the WARC pair in batches of 8, ``trim_heap(KEEP_FREE)`` every 64 pages, the process set up as ``run_parser`` sets
it up (GC, glibc). The ordinary pages are bench_parse_cost.py ``--realistic``'s; 200 pages warm up, then 1000
are measured (10 of each big kind). ``after-trim MiB`` is the largest RSS right after a trim, ``peak MiB`` the
process's peak RSS (both with the pages loaded here: only differences mean something). Rounds alternate between
this tree and ``--baseline REF`` (fresh processes)::

    PYTHONPATH=src:testweb/src .venv/bin/python benchmarks/bench_parser_heap.py --rounds 7 --baseline main
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_PAGES = 1000
_WARM = 200
_BATCH = 8  # what a parser takes in 50 ms (parse/worker.py) at a bench run's ~145 pages/s
_TRIM_EVERY = 64
_READ = 256 * 1024  # bytes a recv_into hands over at most (a fetcher's writes arrive in pieces)


def _child() -> dict[str, float]:
    sys.path.insert(0, str(_HERE))
    from _realistic import big_pages, crawl_order, realistic_context, realistic_web
    from bench_parse import _DEFAULT_CORPUS

    from webtrawl import heap
    from webtrawl.messages import Page
    from webtrawl.pagepipe import _Inbox, frame
    from webtrawl.parse import process_page, worker
    from webtrawl.store import WarcWriter

    tune = getattr(worker, "tune_process", None)  # what run_parser sets up (a tree without it: the GC only)
    if tune is not None:
        tune()
    else:
        heap.collect_less()
    web = realistic_web(_DEFAULT_CORPUS)
    pages, ctx = crawl_order(web, 600), realistic_context(web)
    huge, bomb = big_pages(pages[0])
    stream = [huge if i % 100 == 37 else bomb if i % 100 == 83 else pages[i % len(pages)] for i in range(_PAGES)]

    inbox = _Inbox()  # one fetcher connection's

    def received(batch: list[Page]) -> list[Page]:
        """The batch's pages as the parser holds them: all received, then processed."""
        got: list[Page] = []
        for page in batch:
            head, body = frame(page)
            for part in (head, *body):
                data = memoryview(part)  # the bytes the kernel holds: read from without a copy of their own
                while data:
                    n = min(len(room := inbox.room()), len(data), _READ)
                    room[:n] = data[:n]
                    del room  # as recv_into's: no view of the buffer left (a body's BytesIO hands its bytes over)
                    data = data[n:]
                    inbox.took(n, got)
        return got

    def run(batch: list[Page], writer: WarcWriter, sample: list[int]) -> None:
        for at in range(0, len(batch), _BATCH):
            for page in received(batch[at : at + _BATCH]):
                out = process_page(page, ctx)
                if out.warc:
                    writer.write(page, {"content_hash": out.record.content_hash})
            if (at // _BATCH) % (_TRIM_EVERY // _BATCH) == _TRIM_EVERY // _BATCH - 1:
                heap.trim_heap(heap.KEEP_FREE)
                sample.append(int(Path("/proc/self/statm").read_text().split()[1]))

    with tempfile.TemporaryDirectory(prefix="bench-parser-heap-") as tmp:
        writer = WarcWriter(Path(tmp), "bench", 1 << 40)
        run(stream[:_WARM], writer, [])
        sample: list[int] = []
        before, cpu = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
        run(stream, writer, sample)
        cpu, after = time.process_time() - cpu, resource.getrusage(resource.RUSAGE_SELF)
        writer.close()
    return {
        "ms/page": cpu * 1000 / _PAGES,
        "sys ms/page": (after.ru_stime - before.ru_stime) * 1000 / _PAGES,
        "faults/page": (after.ru_minflt - before.ru_minflt) / _PAGES,
        "after-trim MiB": max(sample) * resource.getpagesize() / 2**20,
        "peak MiB": after.ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(_HERE))
    import _abab

    return _abab.main(Path(__file__), __doc__, _child, argv)


if __name__ == "__main__":
    raise SystemExit(main())
