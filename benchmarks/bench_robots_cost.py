"""CPU per big robots.txt in a fetcher: compile the realistic bench's ~590 KB file and check a few of its paths.

    python benchmarks/bench_robots_cost.py [--rounds 5] [--baseline main]

A crawl checks few paths of most hosts (the realistic bench fetches ~4 pages per robots.txt it reads), so what a
big file costs is its compile plus its first checks; the rows with 100 and 1,000 checks show the cost per check
once a host is crawled longer. Two rows follow a file through the node: ``fetched`` is what the fetcher that
downloads it does (compile, Sitemaps, the value for the frontier store), ``loaded`` what every other fetcher that
leases the origin does, and this one again once its LRU has dropped the rules (read the store's value, compile,
4 checks). Each round is a fresh child (benchmarks/_abab.py), alternating with ``--baseline``. Medians of CPU ms
(process_time) per file, the least disturbed of a few repeats in each child.
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_robots import urls

from webtrawl.politeness.matcher import MATCHERS
from webtrawl.politeness.robots import RobotsRules

_CHECKS = (0, 4, 100, 1000)


def _child() -> dict[str, float]:
    from webtrawl_testweb.realrobots import big_robots

    out: dict[str, float] = {}
    for checks in _CHECKS:
        runs = []
        for key in range(5):
            head, rest = big_robots(f"h{key}.test", key)
            body = head + rest
            paths = urls(max(checks, 1), body, seed=key)[:checks]
            MATCHERS.clear()
            gc.collect()
            t = time.process_time()
            rules = RobotsRules(body, token="webtrawl", max_bytes=len(body) + 1)
            _ = rules.sitemaps  # what the fetcher asks first
            for url in paths:
                rules.allowed(url)
            runs.append((time.process_time() - t) * 1000)
        out[f"{checks} checks ms"] = min(runs)
    fetched, loaded = [], []
    for key in range(5):
        head, rest = big_robots(f"h{key}.test", key)
        body = head + rest
        paths = urls(4, body, seed=key)[:4]
        MATCHERS.clear()
        gc.collect()
        t = time.process_time()
        rules = RobotsRules(body, token="webtrawl", max_bytes=len(body) + 1)
        _ = rules.sitemaps
        value = rules.encode()
        rules.drop_body()
        fetched.append((time.process_time() - t) * 1000)
        del rules
        MATCHERS.clear()
        gc.collect()
        t = time.process_time()
        rules = RobotsRules.decode(value)
        rules.max_bytes = len(body) + 1  # what the fetcher sets on a value of the earlier (whole body) version
        rules.drop_body()
        for url in paths:
            rules.allowed(url)
        loaded.append((time.process_time() - t) * 1000)
        del rules
    out["fetched ms"], out["loaded ms"] = min(fetched), min(loaded)
    return out


def main(argv: list[str] | None = None) -> int:
    from _abab import main as abab

    return abab(Path(__file__), __doc__, _child, argv, digits=2)


if __name__ == "__main__":
    raise SystemExit(main())
