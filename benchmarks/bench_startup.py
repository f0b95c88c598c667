"""A crawl's first minute from its launch, as a user starts it: when its first request comes, and how much it got
done by then (issue 21: the real-web check counts a 60 s crawl, start-up included, where ``trawl bench`` starts its
window at the first request).

Each round launches ``python -m webtrawl crawl`` (embedded Redis, ``--delay 2``, every link followed) on one
realistic test web and reads, at ``--seconds`` after the launch: the first request's time in the web's access log,
the requests and pages (robots.txt left out) done by then, and the CPU seconds of the node's process tree (psutil,
sampled every 0.1 s: a process that ended between two samples is counted to its last one). With ``--baseline
REF`` the rounds alternate between this tree's ``src`` and REF's (git archive), so both see the same machine::

    PYTHONPATH=src:testweb/src .venv/bin/python benchmarks/bench_startup.py --rounds 3 --seconds 60 --baseline HEAD~1
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from _abab import extract_src

from webtrawl_bench.spec import follow_args
from webtrawl_bench.testweb_proc import TestWebProcess, WebSpec
from webtrawl_testweb.accesslog import LogEntry, load

_REPO = Path(__file__).resolve().parents[1]
_SAMPLE_S = 0.1


def _tree_cpu(root: psutil.Process, seen: dict[int, float]) -> None:
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for proc in procs:
        try:
            t = proc.cpu_times()
        except psutil.NoSuchProcess:
            continue
        seen[proc.pid] = t.user + t.system + t.children_user + t.children_system  # Redis's AOF rewrites too


def _growth(entries: list[LogEntry], cpu_at: list[tuple[float, float]], start_ms: float, bucket: float) -> str:
    """Pages, robots.txt and node CPU (% of one core) per ``bucket`` seconds from the launch."""
    end = max((t for t, _ in cpu_at), default=0.0)
    lines = []
    for i in range(round(end / bucket)):
        lo, hi = i * bucket, (i + 1) * bucket
        got = [e for e in entries if lo <= (e.start_ms - start_ms) / 1000 < hi]
        robots = sum(1 for e in got if e.path == "/robots.txt")
        cpu = [c for t, c in cpu_at if lo <= t <= hi]
        used = (cpu[-1] - cpu[0]) / bucket * 100 if len(cpu) > 1 else 0.0
        lines.append(
            f"  {lo:4.0f}-{hi:3.0f} s: {len(got) - robots:5d} pages {robots:5d} robots.txt, node CPU {used:4.0f}%"
        )
    return "\n".join(lines)


def _round(web: TestWebProcess, src: Path, out: Path, seconds: float, bucket: float = 0.0) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(_REPO / "testweb" / "src")]))
    argv = [sys.executable, "-m", "webtrawl", "crawl", *web.info["seeds"], "--out", str(out), *web.crawl_args]
    argv += ["--delay", "2", "--max-time", str(seconds + 30), "--progress", "log", *follow_args(True)]
    launched = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    root, seen = psutil.Process(proc.pid), {}
    cpu_at: list[tuple[float, float]] = []
    while time.time() - launched < seconds:
        _tree_cpu(root, seen)
        cpu_at.append((time.time() - launched, sum(seen.values())))
        time.sleep(_SAMPLE_S)
    proc.send_signal(signal.SIGINT)
    proc.wait()
    start_ms, end_ms = launched * 1000, (launched + seconds) * 1000
    done = [e for e in load(web.log_path) if start_ms <= e.start_ms and e.end_ms <= end_ms]
    if bucket > 0:
        print(_growth(done, cpu_at, start_ms, bucket), flush=True)
    pages = sum(1 for e in done if e.path != "/robots.txt")
    cpu = sum(seen.values())
    first = min((e.start_ms for e in done), default=end_ms) - start_ms
    return {"first_ms": first, "requests": len(done), "pages": pages, "cpu_s": cpu, "ms_per_page": cpu * 1000 / pages}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--baseline", help="git revision to alternate with")
    ap.add_argument("--buckets", type=float, default=0.0, help="print each round's growth per this many seconds")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="trawl-startup-") as tmp:
        trees = {"this": _REPO / "src"}
        if args.baseline:
            (Path(tmp) / "base").mkdir()
            trees[args.baseline] = extract_src(args.baseline, Path(tmp) / "base")
        results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        with TestWebProcess(WebSpec(web="realistic"), Path(tmp) / "web") as web:
            for i in range(args.rounds):
                for name, src in trees.items():
                    got = _round(web, src, Path(tmp) / f"out-{i}-{name[:8]}", args.seconds, args.buckets)
                    results[name].append(got)
                    print(
                        f"{name}: first request {got['first_ms']:.0f} ms after launch; by {args.seconds:g} s "
                        f"{got['requests']:.0f} requests, {got['pages']:.0f} pages, node CPU {got['cpu_s']:.1f} s "
                        f"({got['ms_per_page']:.2f} ms/page)",
                        flush=True,
                    )
        for name, rows in results.items():
            med = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
            print(
                f"median {name}: first request {med['first_ms']:.0f} ms, {med['pages']:.0f} pages, "
                f"{med['ms_per_page']:.2f} ms/page"
            )


if __name__ == "__main__":
    main()
