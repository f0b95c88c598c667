"""What extraction adds to the parser's CPU per page (issue 21): plain crawl vs a callback vs rules files.

Runs the parser's real page processing (``process_page`` with a ``ParseContext``, as ``trawl try`` does) over the
181 corpus pages in one process for four variants: ``plain`` (links only), ``callback`` (a function reading 5 fields
with ``page.css()``), ``xpath`` (a rules file of 5 XPath fields) and ``css`` (the same 5 fields as CSS). The variants
alternate round by round (ABCDABCD...) so a busy shared machine slows them alike; each reports the median of its
rounds in ms of process CPU time per page (``time.process_time``, not wall time) and its cost over ``plain``.

    PYTHONPATH=src:testweb/src .venv/bin/python benchmarks/bench_extract_cost.py [--rounds N] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench_extract import _context, _round
from bench_parse import _DEFAULT_CORPUS, load_pages

VARIANTS = {"plain": "none", "callback": "callback", "xpath": "xpath", "css": "css"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--corpus", type=Path, default=_DEFAULT_CORPUS)
    args = ap.parse_args(argv)
    pages = load_pages(args.corpus)
    with tempfile.TemporaryDirectory() as tmp:
        contexts = {name: _context(mode, Path(tmp)) for name, mode in VARIANTS.items()}
        for ctx in contexts.values():
            _round(pages[:20], ctx)  # warm-up: lazy imports, caches
        times: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(args.rounds):
            for name, ctx in contexts.items():
                times[name].append(1000 * _round(pages, ctx)[0] / len(pages))
    plain = statistics.median(times["plain"])
    for name, samples in times.items():
        ms = statistics.median(samples)
        extra = f", +{ms - plain:.3f} ms (+{100 * (ms - plain) / plain:.0f}%) over plain" if name != "plain" else ""
        print(f"{name:>9}: {ms:.3f} ms CPU/page (median of {len(samples)} rounds){extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
