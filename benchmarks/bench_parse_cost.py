"""CPU per page of a parser's own work (process_page, then the WARC pair) on the realistic web's mix of pages.

The ordinary pages are bench_parse.py ``--web``'s (the corpus pages as the test web serves them, with the trawl
bench scope); the realistic web (testweb realistic.py) also answers 1 page in 100 with a 12 MB page (cut at the
fetcher's 10 MiB ``max_body``: a ``too-large`` error whose body is stored) and 1 in 100 with a 300 MB gzip bomb.
Each kind is timed on its own and ``mix`` weighs them 98:1:1. Rounds are fresh processes alternating between this
tree and ``--baseline REF`` (ABAB...); prints medians of ms of CPU per page::

    PYTHONPATH=src:testweb/src .venv/bin/python benchmarks/bench_parse_cost.py --rounds 7 --baseline main

``--realistic``: the ordinary pages are instead 600 HTML pages of the realistic web in the order one parser of
``trawl bench --web realistic`` gets them, every link followed (benchmarks/_realistic.py): ~90 URLs kept a page,
where the synthetic web's scope keeps ~5.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_SHARE = 0.01  # of the realistic web's pages: 12 MB pages, and gzip bombs (realistic.py huge_share, bomb_share)


def _child() -> dict[str, float]:
    sys.path.insert(0, str(_HERE))
    from _realistic import big_pages
    from bench_parse import _DEFAULT_CORPUS, load_web_pages, make_web_context

    from webtrawl.heap import KEEP_FREE, trim_heap
    from webtrawl.messages import Page
    from webtrawl.parse import process_page
    from webtrawl.store import WarcWriter

    if "--realistic" in sys.argv:
        from _realistic import crawl_order, realistic_context, realistic_web

        web = realistic_web(_DEFAULT_CORPUS)
        pages, ctx = crawl_order(web, 600), realistic_context(web)
    else:
        pages, ctx = load_web_pages(_DEFAULT_CORPUS, 362), make_web_context()
    huge, bomb = big_pages(pages[0])

    def cost(batch: list[Page], directory: Path) -> float:
        writer = WarcWriter(directory, "bench", 1 << 40)
        trim_heap(KEEP_FREE)  # a parser meets a big page once in ~100, over a second: its heap trimmer ran since
        cpu = time.process_time()
        for page in batch:
            out = process_page(page, ctx)
            if out.warc:
                writer.write(page, {"content_hash": out.record.content_hash})
        cpu = time.process_time() - cpu
        writer.close()
        return cpu * 1000 / len(batch)

    with tempfile.TemporaryDirectory(prefix="bench-parse-cost-") as tmp:
        cost(pages, Path(tmp) / "warm")
        row = {
            "page": cost(pages, Path(tmp) / "pages"),
            "huge": min(cost([huge], Path(tmp) / f"huge{i}") for i in range(3)),
            "bomb": min(cost([bomb], Path(tmp) / f"bomb{i}") for i in range(3)),
        }
    row["mix"] = (1 - 2 * _SHARE) * row["page"] + _SHARE * (row["huge"] + row["bomb"])
    return row


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(_HERE))
    import _abab

    flags = {"--realistic": "the realistic web's pages in a parser's order (see above)"}
    return _abab.main(Path(__file__), __doc__, _child, argv, flags=flags)


if __name__ == "__main__":
    raise SystemExit(main())
