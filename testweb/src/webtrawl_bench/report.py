"""The benchmark's printout: one block per run and the medians over runs."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

from webtrawl_bench import webmix
from webtrawl_bench.crawl_run import RunResult
from webtrawl_bench.spec import STATUS_COUNTERS

_KINDS = ("fetcher", "parser", "supervisor", "redis", "other")


def _mb(n: float) -> str:
    return f"{n / 2**20:.0f} MiB"


def describe(run: RunResult) -> str:
    procs = run.processes
    lines = [
        f"  pages: {run.pages:,} in {run.seconds:.1f}s = {run.pages_per_s:.1f} pages/s (HTTP responses, robots.txt "
        "not counted)",
        f"  node CPU: {run.ms_per_page():.2f} ms/page ("
        + ", ".join(f"{k} x{procs.get(k, 0)} {run.ms_per_page(k):.2f}" for k in _KINDS)
        + f"); test web (not counted) {run.ms_per_page('testweb'):.2f} ms/page",
        f"  speed probe: {run.probe_us:.0f} us of the bench's own CPU (median in the window; lower is faster)",
        f"  robots.txt: {run.robots_requests:,} requests = {run.robots_requests / max(1, run.pages):.3f} per page"
        + (
            " (test web: " + ", ".join(f"{k} {v:,}" for k, v in sorted(run.web_counts.items()) if "robots" in k) + ")"
            if run.web_counts
            else " (the crawler's robots-fetched)"
        ),
        f"  connections: {run.new_connections:,} new TCP connections to the test web in the window = "
        f"{run.new_connections / max(1, run.pages):.2f} per page (robots.txt fetches share them)",
        "  peak RSS per process: " + ", ".join(f"{k} {_mb(v)}" for k, v in sorted(run.peak_rss.items())),
        f"  Redis: {run.redis_reads / max(1, run.pages):.2f} round trips/page (total_reads_processed), "
        f"{run.redis_scripts / max(1, run.pages):.2f} script calls/page, "
        f"{run.redis_commands / max(1, run.pages):.1f} commands/page (total_commands_processed, incl. inside scripts)",
        f"  Redis memory: {run.bytes_per_url():.1f} B per queued URL without the Bloom filter, "
        f"{run.bytes_per_url(with_bloom=True):.1f} B with it ({run.queued:,} queued, Bloom {_mb(run.bloom_bytes)})",
        "  in the window: " + ", ".join(f"{k} {run.counters.get(k, 0):,}" for k in STATUS_COUNTERS),
    ]
    if run.counters.get("warc"):
        lines.append(f"  WARC: {run.warc_kb_per_pair:.1f} KB per page's records ({_mb(run.warc_bytes)} in the window)")
    if run.web_counts:
        faults = ", ".join(f"{k} {v:,}" for k, v in run.faults.items()) or "none"
        errors = ", ".join(f"{k} {v:,}" for k, v in sorted(run.counters.items()) if k.startswith("err:")) or "none"
        lines.append(f"  faults served in the window: {faults}; crawler errors: {errors}")
    if run.web_mix is not None:
        lines.append(webmix.describe(run.web_mix))
    if run.preloaded:
        lines.insert(0, f"  preloaded {run.preloaded:,} never-ready URLs in {run.preload_seconds:.0f}s")
    return "\n".join(lines)


def _median(runs: Sequence[RunResult], value: Callable[[RunResult], float]) -> str:
    values = [value(r) for r in runs]
    med = statistics.median(values)
    spread = f" (runs: {', '.join(f'{v:.2f}' for v in values)})" if len(values) > 1 else ""
    return f"{med:.2f}{spread}"


def _per_kind(kind: str) -> Callable[[RunResult], float]:
    return lambda r: r.ms_per_page(kind)


def summary(runs: Sequence[RunResult]) -> str:
    rows = [
        ("pages/s", lambda r: r.pages_per_s),
        ("node CPU ms/page (test web excluded)", lambda r: r.ms_per_page()),
        *((f"  {k} ms/page", _per_kind(k)) for k in _KINDS),
        ("test web ms/page (not counted)", lambda r: r.ms_per_page("testweb")),
        ("pages per node CPU-second", lambda r: r.pages / max(1e-9, r.node_cpu())),
        ("speed probe us (lower: faster)", lambda r: r.probe_us),
        ("new connections/page", lambda r: r.new_connections / max(1, r.pages)),
        ("robots.txt requests/page", lambda r: r.robots_requests / max(1, r.pages)),
        ("Redis round trips/page", lambda r: r.redis_reads / max(1, r.pages)),
        ("Redis commands/page", lambda r: r.redis_commands / max(1, r.pages)),
        ("Redis B/queued URL (no Bloom)", lambda r: r.bytes_per_url()),
        ("WARC KB/page", lambda r: r.warc_kb_per_pair),
    ]
    width = max(len(name) for name, _ in rows)
    out = [f"medians of {len(runs)} run(s):"]
    out += [f"  {name:<{width}}  {_median(runs, fn)}" for name, fn in rows]
    kinds = sorted({k for r in runs for k in r.peak_rss})
    out.append(
        "  peak RSS (max over runs): " + ", ".join(f"{k} {_mb(max(r.peak_rss.get(k, 0) for r in runs))}" for k in kinds)
    )
    return "\n".join(out)
