"""What rendering costs: rendered pages/s, CPU and memory per rendered page, and the whole node's cost of ``auto``.

    nice -n 19 .venv/bin/python benchmarks/bench_render.py [--apps 8] [--items 9] [--renderers 2] [--fetchers 1]

Serves :class:`webtrawl_testweb.jsweb.JsWeb` in this process and runs real ``trawl crawl`` processes against it:

1. **render**: ``--render always`` over ``--apps`` script-built hosts (``app<i>.js.test``, 1 + ``--items`` pages
   each). Reports rendered pages/s (wall), the node's CPU per rendered page (all processes: supervisor, Redis,
   fetchers, parsers, Playwright's driver and Chromium, from ``getrusage(RUSAGE_CHILDREN)``), and the peak memory
   (PSS: shared pages divided among the processes sharing them) of the Chromium processes and of the whole node,
   sampled every 0.5 s.
2. **auto at 5%**: a web where 5% of the pages are script-built (``--apps`` app hosts among plain hosts), crawled
   with ``--render never`` and then ``--render auto``: the node's CPU and wall time of each, so the cost of ``auto``
   (HTTP first, shell test, renders of the 5%) against a crawl that renders nothing.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]

from webtrawl_testweb.jsweb import JsWeb


def _tree_rss(root: int) -> tuple[int, int]:
    """(Chromium PSS, whole tree PSS) of the process tree under ``root``."""
    chromium = total = 0
    try:
        procs = [psutil.Process(root), *psutil.Process(root).children(recursive=True)]
    except psutil.Error:
        return 0, 0
    for proc in procs:
        try:
            rss = proc.memory_full_info().pss  # shared pages split between sharers: a sum that means something
            total += rss
            if "chrom" in proc.name().lower():
                chromium += rss
        except psutil.Error:
            continue
    return chromium, total


def _crawl(web: JsWeb, seeds: list[str], out: Path, *args: str) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "webtrawl", "crawl", *seeds, *web.crawl_args(), "--out", str(out), "--progress", "off"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen([*cmd, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.5):
            chromium, total = _tree_rss(proc.pid)
            peak[0], peak[1] = max(peak[0], chromium), max(peak[1], total)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait(1800)
    done.set()
    sampler.join()
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows = [json.loads(line) for p in (out / "records").glob("*.jsonl*") for line in p.read_text().splitlines()]
    rendered = sum(1 for r in rows if r.get("rendered"))
    return {
        "exit": code,
        "pages": len(rows),
        "rendered": rendered,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_chromium_pss_mib": round(peak[0] / 2**20),
        "peak_node_pss_mib": round(peak[1] / 2**20),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--apps", type=int, default=8, help="script-built hosts")
    parser.add_argument("--items", type=int, default=9, help="item pages per host (each host has 1 + items)")
    parser.add_argument("--renderers", type=int, default=2, help="--renderers (pages rendered at once per fetcher)")
    parser.add_argument("--fetchers", type=int, default=1)
    parser.add_argument("--delay", type=float, default=1.0)
    args = parser.parse_args()
    common = ["--fetchers", str(args.fetchers), "--parsers", "1", "--delay", str(args.delay)]
    common += ["--renderers", str(args.renderers)]
    tmp = Path(tempfile.mkdtemp(prefix="bench-render-"))
    try:
        with JsWeb(items=args.items, plain_pages=19) as web:
            apps = [web.url(f"app{i}.js.test") for i in range(args.apps)]
            result = _crawl(web, apps, tmp / "render", "--render", "always", *common)
            n = max(1, result["rendered"])
            result["rendered_per_s"] = round(result["rendered"] / result["wall_s"], 2)
            result["cpu_ms_per_rendered"] = round(result["cpu_s"] * 1000 / n, 1)
            print(json.dumps({"render": result}), flush=True)
            # 5% of the pages script-built: apps * (1 + items) app pages among 19 * that many plain ones.
            app_pages = args.apps * (1 + args.items)
            plain_hosts = max(1, round(19 * app_pages / 20))
            mixed = [*apps, *(web.url(f"plain{i}.js.test") for i in range(plain_hosts))]
            for mode in ("never", "auto"):
                result = _crawl(web, mixed, tmp / mode, "--render", mode, *common)
                result["cpu_ms_per_page"] = round(result["cpu_s"] * 1000 / max(1, result["pages"]), 2)
                print(json.dumps({f"mixed-{mode}": result}), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
