"""The soak: one node crawling the chaos test web for an hour; is anything creeping?

    PYTHONPATH=src:testweb/src nice -n 5 .venv/bin/python benchmarks/soak.py --minutes 60 --out /work/soak-run
    .venv/bin/python benchmarks/soak.py --report /work/soak-run/soak.csv [--png benchmarks/soak.png]

Starts the synthetic test web with the hostile hosts (``--chaos``: bombs, resets, stalls, bad TLS, endless calendar
and query traps) in its own process, a redis-server owned by the soak (so it can read Redis's memory), and one
``trawl crawl`` node confined to the test web (``--ip-allow 127.0.0.0/8 --ports <its ports>``). Every
``--interval`` seconds it samples RSS, PSS and open fds of every process of the node, Redis ``used_memory`` and the
queued URLs, and the fetched/error counters; each sample is a CSV row (written at once, so a running soak can be
watched) and a JSON line with the per-process numbers. At the end it plots the CSV and prints each metric at the end
of the warm-up and at the end, and its least-squares slope per hour after the warm-up. Numbers, no thresholds.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from webtrawl.config import load
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl_bench.crawl_run import NodeProcess
from webtrawl_bench.procstat import ProcessWatch
from webtrawl_bench.redisstat import bloom_bytes, used_memory
from webtrawl_bench.spec import MODEL_URLS
from webtrawl_bench.testweb_proc import TestWebProcess, WebSpec

MIB = 1024 * 1024
# The synthetic web's model links and every hostile host (the corpus pages' own relative links only 404 there).
FOLLOW = rf"{MODEL_URLS}|^https?://[^/]*chaos(?:\.test|-dns\.example)(?::\d+)?(?:/|$)"
KINDS = ("fetcher", "parser", "supervisor", "redis", "other")
# (column, label, unit scale) of the plot's panels; the summary covers the same columns
PANELS: tuple[tuple[str, str, tuple[str, ...], float], ...] = (
    ("node memory (MiB)", "MiB", ("node_rss", "node_pss", "fetcher_rss", "parser_rss", "redis_rss"), MIB),
    ("open fds", "fds", ("node_fds", "fetcher_fds", "parser_fds"), 1.0),
    ("Redis bytes per queued URL", "B/URL", ("redis_bytes_per_queued", "redis_bytes_per_queued_bloom"), 1.0),
    ("queued URLs (thousands); Redis used_memory (MiB)", "", ("queued_k", "redis_used_mib"), 1.0),
    ("crawl rate (pages/s)", "pages/s", ("pages_per_s", "errors_per_s"), 1.0),
    ("node CPU (% of one core); the machine's load average (right)", "%", ("node_cpu_pct", "load1_x100"), 1.0),
)
RIGHT_AXIS = {"load1_x100": ("load average (1 min)", 100.0)}  # columns drawn on their own scale, on the right
SUMMARY = (
    ("node_rss", MIB, "MiB"),
    ("node_pss", MIB, "MiB"),
    ("fetcher_rss", MIB, "MiB"),
    ("parser_rss", MIB, "MiB"),
    ("supervisor_rss", MIB, "MiB"),
    ("redis_rss", MIB, "MiB"),
    ("node_fds", 1.0, "fds"),
    ("redis_used_mib", 1.0, "MiB"),
    ("queued", 1.0, "URLs"),
    ("redis_bytes_per_queued", 1.0, "B/URL"),
    ("redis_bytes_per_queued_bloom", 1.0, "B/URL"),
    ("pages_per_s", 1.0, "pages/s"),
    ("errors_per_s", 1.0, "errors/s"),
    ("node_cpu_pct", 1.0, "%"),
    ("node_ms_per_page", 1.0, "ms CPU"),
    ("load1_x100", 100.0, "load"),
)


def open_fds(pid: int) -> int:
    """Open file descriptors of ``pid`` (``/proc/PID/fd``); -1 if the process is gone or not ours."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return -1


def memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) bytes of ``pid`` from ``/proc/PID/smaps_rollup``; (0, 0) if the process is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Rss:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith(b"Pss:"):
                    pss = int(line.split()[1]) * 1024
    except OSError:
        pass
    return rss, pss


def processes(watch: ProcessWatch, names: dict[int, str]) -> tuple[dict[int, dict[str, Any]], float]:
    """Every process of the node now: pid -> name, kind, rss, pss, fds, cpu seconds; and their CPU seconds."""
    sample = watch.sample()
    out: dict[int, dict[str, Any]] = {}
    for pid, kind in sample.kind.items():
        if kind == "testweb":
            continue
        rss, pss = memory(pid)
        fds = open_fds(pid)
        if fds < 0:
            continue
        out[pid] = {"name": names.get(pid, kind), "kind": kind, "rss": rss, "pss": pss, "fds": fds}
        out[pid]["cpu"] = sample.cpu[pid]
    return out, sum(p["cpu"] for p in out.values())


def _names(out_dir: Path) -> dict[int, str]:
    try:
        return {int(pid): str(name) for name, pid in json.loads((out_dir / "children.json").read_text()).items()}
    except (OSError, ValueError, TypeError):
        return {}


def row(t: float, procs: dict[int, dict[str, Any]], redis: dict[str, int], rates: dict[str, float]) -> dict[str, Any]:
    """One CSV row: sums over the node's processes and per kind, Redis and the crawl's counters."""
    out: dict[str, Any] = {"t_s": round(t, 1), "utc": time.strftime("%H:%M:%S", time.gmtime())}
    by_kind: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in procs.values():
        for key in ("rss", "pss", "fds"):
            by_kind[p["kind"]][key] += p[key]
            by_kind["node"][key] += p[key]
        by_kind[p["kind"]]["n"] += 1
    for kind in ("node", *KINDS):
        for key in ("rss", "pss", "fds"):
            out[f"{kind}_{key}"] = by_kind[kind][key]
    out["processes"] = len(procs)
    queued, data = redis["queued"], redis["used"] - redis["bloom"]
    out.update(
        queued=queued,
        queued_k=queued / 1000,
        redis_used_mib=round(redis["used"] / MIB, 2),
        redis_bloom_mib=round(redis["bloom"] / MIB, 2),
        redis_bytes_per_queued=round(data / queued, 1) if queued else "",
        redis_bytes_per_queued_bloom=round(redis["used"] / queued, 1) if queued else "",
        ready_hosts=redis["ready_hosts"],
        waiting_hosts=redis["waiting_hosts"],
        fetched=redis["fetched"],
        errors=redis["errors"],
        dropped=redis["dropped"],
    )
    out.update({k: round(v, 2) for k, v in rates.items()})
    out["load1_x100"] = round(100 * os.getloadavg()[0])  # the other work on the machine: the rate follows it
    return out


def _redis(client: Any, frontier: RedisFrontier, empty: int) -> dict[str, int]:
    c = frontier.counters()
    v = c.values
    return {
        "used": used_memory(client) - empty,
        "bloom": bloom_bytes(client, frontier),
        "queued": c.queued,
        "ready_hosts": c.ready_hosts,
        "waiting_hosts": c.waiting_hosts,
        "fetched": v.get("fetched", 0),
        "errors": sum(n for k, n in v.items() if k.startswith("err:")),
        "dropped": sum(n for k, n in v.items() if k.startswith("drop:")),
    }


def soak(ns: argparse.Namespace) -> Path:
    root: Path = ns.out
    root.mkdir(parents=True, exist_ok=True)
    csv_path, jsonl = root / "soak.csv", root / "samples.jsonl"
    spec = WebSpec(web="synthetic", hosts=ns.hosts, corpus_fraction=ns.corpus_fraction, chaos=True)
    expected = str(ns.expected_urls)
    with TestWebProcess(spec, ns.out / "testweb") as web, EmbeddedRedis(ns.out / "redis") as server:
        out = ns.out / "crawl"
        cfg = load({"expected_urls": expected, "out": str(out)})
        client = connect_sync(server.url)
        empty = used_memory(client)
        frontier = RedisFrontier.open(client, FrontierSettings.from_config(cfg))
        argv = [*web.info["seeds"], "--out", str(out), *web.crawl_args, "--redis", server.url]
        argv += ["--delay", repr(ns.delay), "--expected-urls", expected, "--progress", "log", "--no-warc"]
        argv += ["--include", FOLLOW, "--max-time", repr(ns.minutes * 60 + 600), *ns.crawl_arg]
        print(f"soak: test web pid {web.pid} ports {web.ports} + chaos; redis pid {server.pid}; {ns.out}", flush=True)
        node = NodeProcess(argv, ns.out / "node.log")
        watch = ProcessWatch(node.proc.pid, out, server.pid, [web.pid])
        try:
            while not frontier.counters().values.get("fetched") and node.proc.poll() is None:
                time.sleep(0.5)
            _loop(ns, node, watch, out, client, frontier, empty, csv_path, jsonl)
        finally:
            node.stop()
            client.close()
    print(f"node exit status {node.proc.returncode}", flush=True)
    return csv_path


def _loop(
    ns: argparse.Namespace,
    node: NodeProcess,
    watch: ProcessWatch,
    out: Path,
    client: Any,
    frontier: RedisFrontier,
    empty: int,
    csv_path: Path,
    jsonl: Path,
) -> None:
    t0 = last_t = time.monotonic()
    last: dict[str, float] = {}  # the previous sample's counters: the first row has no rates
    writer: csv.DictWriter[str] | None = None
    with csv_path.open("w", newline="") as f, jsonl.open("w") as lines:
        while True:
            now = time.monotonic()
            procs, cpu = processes(watch, _names(out))
            red = _redis(client, frontier, empty)
            dt = max(now - last_t, 1e-6)
            rates = {
                "pages_per_s": (red["fetched"] - last.get("fetched", red["fetched"])) / dt,
                "errors_per_s": (red["errors"] - last.get("errors", red["errors"])) / dt,
                "node_cpu_pct": 100.0 * (cpu - last.get("cpu", cpu)) / dt,
            }
            last, last_t = {"fetched": red["fetched"], "errors": red["errors"], "cpu": cpu}, now
            r = row(now - t0, procs, red, rates)
            if writer is None:
                writer = csv.DictWriter(f, fieldnames=list(r))
                writer.writeheader()
            writer.writerow(r)
            f.flush()
            lines.write(json.dumps({"t_s": r["t_s"], "redis": red, "processes": procs}) + "\n")
            lines.flush()
            if now - t0 >= ns.minutes * 60 or node.proc.poll() is not None:
                return
            time.sleep(max(0.0, t0 + ns.interval * (1 + int((now - t0) / ns.interval)) - time.monotonic()))


def read_csv(path: Path) -> list[dict[str, float]]:
    """The samples, with the node's CPU per page of each interval (the rate follows the machine's other work; the
    cost of a page should not)."""
    with path.open() as f:
        rows = [{k: float(v) for k, v in r.items() if v not in ("", None) and k != "utc"} for r in csv.DictReader(f)]
    for r in rows:
        if r.get("pages_per_s") and "node_cpu_pct" in r:
            r["node_ms_per_page"] = 10.0 * r["node_cpu_pct"] / r["pages_per_s"]
    return rows


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over xs; 0 for fewer than two distinct xs."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def slope_per_hour(ts: list[float], ys: list[float]) -> float:
    """Least-squares slope of ys over ts (seconds), per hour."""
    return 3600.0 * slope(ts, ys)


def marginal_bytes_per_url(rows: list[dict[str, float]], warmup_s: float) -> float:
    """What one more queued URL costs Redis after the warm-up: the slope of used_memory over the queued URLs (the
    ratio of the two also carries the fixed costs, the seen filter first, so it falls as the queue grows)."""
    after = [r for r in rows if r["t_s"] >= warmup_s and "queued" in r and "redis_used_mib" in r]
    return slope([r["queued"] for r in after], [r["redis_used_mib"] * MIB for r in after])


def _mean_near(rows: list[dict[str, float]], col: str, t: float, span: float) -> float:
    """The mean of ``col`` over the samples within ``span`` s before ``t``: the rate columns are noisy."""
    ys = [r[col] for r in rows if col in r and t - span <= r["t_s"] <= t]
    return sum(ys) / len(ys) if ys else float("nan")


def summary(rows: list[dict[str, float]], warmup_s: float, span: float = 120.0) -> list[str]:
    end = rows[-1]["t_s"]
    lines = [
        f"{len(rows)} samples over {end / 60:.1f} min; warm-up {warmup_s / 60:g} min; values are means of the "
        f"{span:g} s before the warm-up's end and before the end; slope: least squares over the samples after the "
        "warm-up",
        f"{'metric':30} {'warm-up end':>14} {'end':>14} {'slope/h':>12} {'slope/h %':>10}",
    ]
    for col, scale, unit in SUMMARY:
        after = [r for r in rows if r["t_s"] >= warmup_s and col in r]
        a, b = _mean_near(rows, col, warmup_s, span) / scale, _mean_near(rows, col, end, span) / scale
        s = slope_per_hour([r["t_s"] for r in after], [r[col] / scale for r in after])
        rel = f"{100 * s / a:+.1f}%" if a else "-"
        lines.append(f"{col + ' (' + unit + ')':30} {a:14,.1f} {b:14,.1f} {s:+12,.2f} {rel:>10}")
    lines.append(f"Redis memory per URL queued after the warm-up: {marginal_bytes_per_url(rows, warmup_s):,.0f} B")
    return lines


def plot(rows: list[dict[str, float]], warmup_s: float, png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 2, figsize=(11, 9), sharex=True)
    for ax, (name, unit, cols, scale) in zip(axes.flat, PANELS, strict=True):
        for i, col in enumerate(cols):
            target, div = ax, scale
            if col in RIGHT_AXIS:
                target, (label, div) = ax.twinx(), RIGHT_AXIS[col]
                target.set_ylabel(label)
            pts = [(r["t_s"] / 60, r[col] / div) for r in rows if col in r]
            if pts:
                target.plot(*zip(*pts, strict=True), label=col, linewidth=1, color=f"C{i}")
                if target is not ax:
                    target.set_ylim(bottom=0)
                    target.legend(fontsize=7, loc="upper right")
        ax.axvline(warmup_s / 60, color="grey", linestyle=":", linewidth=1)
        ax.set_title(name, fontsize=10)
        ax.set_ylabel(unit)
        # the first minutes (empty queue, a first sample of everything) would squeeze the rest into one line
        later = [r[c] / scale for r in rows if r["t_s"] >= warmup_s / 5 for c in cols if c in r and c not in RIGHT_AXIS]
        ax.set_ylim(0, 1.15 * max(later) if later and max(later) > 0 else None)
        if cols[0] == "redis_bytes_per_queued":
            marginal = marginal_bytes_per_url(rows, warmup_s)
            ax.set_title(f"{name} (after warm-up: {marginal:,.0f} B per URL more)", fontsize=10)
        ax.legend(fontsize=7, loc="lower right")
        ax.grid(alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("minutes since the first fetch (dotted: end of warm-up)")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(png, dpi=70, pil_kwargs={"optimize": True})
    plt.close(fig)


def report(csv_path: Path, warmup_min: float, png: Path, title: str) -> None:
    rows = read_csv(csv_path)
    if not rows:
        raise SystemExit(f"soak: no samples in {csv_path}")
    for line in summary(rows, warmup_min * 60):
        print(line)
    plot(rows, warmup_min * 60, png, title)
    print(f"plot: {png}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--minutes", type=float, default=60.0, help="crawl this long after the first fetch")
    p.add_argument("--warmup", type=float, default=10.0, help="minutes before the slopes are fitted")
    p.add_argument("--interval", type=float, default=15.0, help="seconds between samples")
    p.add_argument("--hosts", type=int, default=100_000, help="synthetic hosts (10-40 pages each)")
    p.add_argument("--corpus-fraction", type=float, default=0.1, help="share of the pages that are real pages")
    p.add_argument("--delay", type=float, default=2.0, help="per-host delay of the crawl")
    p.add_argument("--expected-urls", type=int, default=10_000_000, help="sizes the seen filter")
    p.add_argument("--out", type=Path, help="directory of the run (CSV, samples, node log, crawl output)")
    p.add_argument("--report", type=Path, metavar="CSV", help="only summarise and plot this CSV")
    p.add_argument("--png", type=Path, help="the plot (default: next to the CSV)")
    p.add_argument("--title", help="the plot's title")
    p.add_argument("--crawl-arg", action="append", default=[], metavar="ARG", help="extra 'trawl crawl' argument")
    ns = p.parse_args(argv)
    if ns.report is None and ns.out is None:
        p.error("give --out DIR (a soak) or --report CSV")
    csv_path = ns.report or soak(ns)
    title = ns.title or f"webtrawl soak: one node on the chaos test web ({csv_path.parent})"
    report(csv_path, ns.warmup, ns.png or csv_path.with_suffix(".png"), title)
    return 0


if __name__ == "__main__":
    sys.exit(main())
