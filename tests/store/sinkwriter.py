"""A process that writes batches to sinks and says which are done (``-m tests.store.sinkwriter START END URL...``).

Batch ``b`` holds pages ``http://k.test/<b>-<j>`` (j < 4), each with 5 items; after each batch is written to every
sink and flushed, ``done <b>`` is printed. Killed with SIGKILL by the test at any point.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.store.sinkdata import ctx, products
from webtrawl.store.registry import open_sink

PAGES, ITEMS = 4, 5


def batch(b: int) -> list:  # type: ignore[type-arg]
    return [products(f"http://k.test/{b}-{j}", ITEMS, pad="x" * 500) for j in range(PAGES)]


def main() -> None:
    start, end, *urls = sys.argv[1:]
    out = Path(os.environ.get("SINKWRITER_OUT", "."))  # the crawl's output directory (the Parquet types agreed)
    sinks = [open_sink(url, "items", ctx(out, chunk=60)) for url in urls]
    for b in range(int(start), int(end)):
        for sink in sinks:
            sink.write(batch(b))
            sink.flush()
        print(f"done {b}", flush=True)
    for sink in sinks:
        sink.close()


if __name__ == "__main__":
    main()
