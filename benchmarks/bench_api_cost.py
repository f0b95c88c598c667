"""What the Python API costs per page against the command line (issue 19): the same crawl both ways, alternating.

Starts the local test web (synthetic pages only, as the tests' session web) and crawls all of it ``--pairs`` times
through ``python -m webtrawl crawl`` and through a small script calling ``webtrawl.Crawler(None, ...).run()``,
alternating CLI, API, CLI, API... so a busy shared machine slows both alike. Both run as a subprocess measured the
same way: the CPU time (user + sys) the kernel charged the subprocess and every descendant it waited for
(``RUSAGE_CHILDREN`` before and after), divided by the pages it fetched (lines of ``records/``). The supervisor
(the subprocess itself in both cases: the API runs the node in the calling process) has its RSS and PSS sampled
while the crawl runs; the peak is reported.

    PYTHONPATH=src:testweb/src python benchmarks/bench_api_cost.py [--pairs N] [--hosts N]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil  # type: ignore[import-untyped]

from webtrawl.options import BY_NAME
from webtrawl_testweb import TestWeb, WebOptions

_SCRIPT = """
import json, sys
from webtrawl import Crawler

if __name__ == "__main__":
    Crawler(None, out=sys.argv[2], **json.loads(sys.argv[1])).run()
"""
_QUICK = ["--delay", "0", "--fetchers", "1", "--parsers", "1", "--robots-retry", "0.2", "--backoff-base", "0.2"]


def _options(args: list[str]) -> dict[str, str | list[str]]:
    """Command line flags (``--name value`` pairs) as the API's keywords."""
    options: dict[str, str | list[str]] = {}
    for flag, value in zip(args[::2], args[1::2], strict=True):
        name = flag.removeprefix("--").replace("-", "_")
        if BY_NAME[name].repeat:
            options[name] = [*options.get(name, []), value]
        else:
            options[name] = value
    return options


def _pages(out: Path) -> int:
    return sum(path.read_text().count("\n") for path in (out / "records").glob("*.jsonl*"))


def _run(cmd: list[str], out: Path) -> dict[str, float]:
    """One crawl subprocess: its tree's CPU ms per page, pages, and the supervisor's peak RSS/PSS in MiB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    supervisor = psutil.Process(proc.pid)
    rss = pss = 0
    while proc.poll() is None:
        try:
            mem = supervisor.memory_full_info()
            rss, pss = max(rss, mem.rss), max(pss, mem.pss)
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            break
        time.sleep(0.1)
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"crawl failed ({proc.returncode}): {' '.join(cmd)}\n{err.decode()[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    pages = _pages(out)
    return {"ms_per_page": 1000 * cpu / pages, "pages": pages, "rss_mib": rss / 2**20, "pss_mib": pss / 2**20}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--hosts", type=int, default=40)
    args = ap.parse_args(argv)
    with TestWeb(args.hosts, 19, options=WebOptions(corpus_fraction=0.0)) as web, tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        script = tmp / "api_crawl.py"
        script.write_text(_SCRIPT)
        seeds = web.seeds(args.hosts)
        flags = [*web.crawl_args(), *_QUICK]
        api_options = json.dumps({**_options(flags), "urls": seeds})
        results: dict[str, list[dict[str, float]]] = {"cli": [], "api": []}
        for i in range(args.pairs):
            for name in results:
                out = tmp / f"{name}-{i}"
                if name == "cli":
                    cmd = [sys.executable, "-m", "webtrawl", "crawl", *seeds, *flags, "--progress", "log"]
                    cmd += ["--out", str(out)]
                else:
                    cmd = [sys.executable, str(script), api_options, str(out)]
                row = _run(cmd, out)
                results[name].append(row)
                print(f"{name} run {i + 1}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    for name, rows in results.items():
        ms = [row["ms_per_page"] for row in rows]
        print(
            f"{name}: {statistics.median(ms):.3f} ms CPU/page (median of {len(ms)}, range {min(ms):.3f}-{max(ms):.3f}),"
            f" pages {statistics.median(row['pages'] for row in rows):.0f},"
            f" supervisor peak RSS {statistics.median(row['rss_mib'] for row in rows):.1f} MiB"
            f" PSS {statistics.median(row['pss_mib'] for row in rows):.1f} MiB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
