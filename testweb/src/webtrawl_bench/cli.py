"""``trawl bench``: crawl the local test web for a fixed time and print what each page cost.

Nothing leaves 127.0.0.0/8: the node gets the test web's ``--resolve '*.test=127.0.0.1' --ip-allow 127.0.0.0/8
--ports <test web ports> --ca-file <its CA>``, and every run stops by itself after ``--warmup + --seconds``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from webtrawl_bench.spec import CrawlSpec
from webtrawl_bench.testweb_proc import DEFAULT_HOSTS, WEBS, TestWebProcess, WebSpec

# ``trawl bench`` is this module, as an entry point of ``webtrawl.commands`` (testweb/pyproject.toml).
HELP = "measure the crawler against the local test web (pages/s, CPU per page)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    web, crawl = WebSpec(), CrawlSpec()
    parser.add_argument(
        "--web",
        choices=WEBS,
        default=web.web,
        help="realistic: corpus pages with their real links, hosts found by crawling, real robots.txt shapes and "
        "faults (default); synthetic: the model web of small generated pages, every host's root seeded",
    )
    parser.add_argument(
        "--hosts",
        type=int,
        help=f"test web hosts (default {DEFAULT_HOSTS['realistic']:,} realistic, {DEFAULT_HOSTS['synthetic']:,} "
        "synthetic; at least 2000 for a broad crawl)",
    )
    parser.add_argument("--seeds", type=int, default=web.seeds, help="seed hosts of the realistic web")
    parser.add_argument(
        "--web-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="realistic: a share of the test web (webtrawl_testweb.realistic.RealisticOptions), e.g. fault_share=0 "
        "(repeatable)",
    )
    parser.add_argument(
        "--corpus-fraction", type=float, default=web.corpus_fraction, help="synthetic: share of pages that are real"
    )
    parser.add_argument("--min-pages", type=int, default=web.min_pages, help="synthetic: fewest pages per host")
    parser.add_argument("--max-pages", type=int, default=web.max_pages, help="synthetic: most pages per host")
    parser.add_argument("--corpus-dir", type=Path, help="real pages for bodies (default ../shared/corpus)")
    parser.add_argument("--seconds", type=float, default=crawl.window, help="measured window per run")
    parser.add_argument("--warmup", type=float, default=crawl.warmup, help="seconds crawled before the window")
    parser.add_argument("--delay", type=float, default=crawl.delay, help="per-host delay of the crawl")
    parser.add_argument("--fetchers", type=int, default=crawl.fetchers, help="fetcher processes (0: node default)")
    parser.add_argument("--parsers", type=int, default=crawl.parsers, help="parser processes (0: node default)")
    parser.add_argument("--concurrency", type=int, default=crawl.concurrency, help="requests in flight per fetcher")
    parser.add_argument(
        "--expected-urls",
        type=int,
        default=crawl.expected_urls,
        help="the crawl's --expected-urls (the seen filter's first size; default: trawl crawl's)",
    )
    parser.add_argument("--no-warc", dest="warc", action="store_false", help="crawl without WARC output")
    parser.add_argument(
        "--follow-all",
        action="store_true",
        help="synthetic: also follow the corpus pages' own links (mostly 404s there; the realistic web follows all)",
    )
    parser.add_argument(
        "--preload",
        default="0",
        help="never-ready URLs queued before the crawl; a comma list runs each size (e.g. 10000,1000000,5000000)",
    )
    parser.add_argument("--runs", type=int, default=3, help="runs per setting (medians are printed)")
    parser.add_argument("--workdir", type=Path, help="keep the runs' output here (default: a temporary dir)")
    parser.add_argument("--json", type=Path, help="write every run's numbers here")
    parser.add_argument(
        "--crawl-arg", action="append", default=[], metavar="ARG", help="extra 'trawl crawl' argument (repeatable)"
    )


def machine() -> dict[str, Any]:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)

    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
        "nproc": os.cpu_count(),
        "cpu": model or platform.processor(),
        "git": rev.stdout.strip() or "unknown",
        "python": platform.python_version(),
        "load": os.getloadavg(),
    }


def _web_line(ns: argparse.Namespace, web: TestWebProcess) -> str:
    if ns.web == "realistic":
        shares = web.info.get("shares", {})
        robots = shares.get("robots-ordinary", 0) + shares.get("robots-big", 0) + shares.get("robots-crawl_delay", 0)
        return (
            f"test web: realistic, {ns.hosts} hosts ({ns.seeds} seeded), {web.info['corpus_pages']} corpus pages; "
            f"robots.txt on {robots:.0%} of hosts ({shares.get('robots-big', 0):.0%} ~590 KB / 16,000 rules, "
            f"{shares.get('robots-crawl_delay', 0):.0%} Crawl-delay, {shares.get('robots-unavailable', 0):.0%} "
            f"answer 503), faults on {shares.get('faulty', 0):.0%}, HTTPS {shares.get('https', 0):.0%}; "
            f"{shares.get('page-huge', 0):.1%} of pages 12 MB, {shares.get('page-bomb', 0):.1%} gzip bombs"
        )
    return (
        f"test web: synthetic, {ns.hosts} hosts of {ns.min_pages}-{ns.max_pages} pages, corpus fraction "
        f"{ns.corpus_fraction:g} ({web.info['corpus_pages']} pages)"
    )


def run(ns: argparse.Namespace) -> int:
    from webtrawl_bench.report import describe, summary  # on use: it loads the runner and the test web

    if ns.hosts is None:
        ns.hosts = DEFAULT_HOSTS[ns.web]
    if ns.hosts < 1 or ns.runs < 1 or ns.seconds <= 0 or ns.seeds < 1:
        raise SystemExit("trawl bench: --hosts, --seeds, --runs and --seconds must be positive")
    from webtrawl_bench.crawl_run import RunResult, run_once

    sizes = [int(s) for s in str(ns.preload).split(",") if s.strip()]
    info = machine()
    print(
        f"trawl bench: {info['date']}, git {info['git']}, {info['nproc']} x {info['cpu']}, "
        f"load {' '.join(f'{x:.2f}' for x in info['load'])}",
        flush=True,
    )
    root = ns.workdir or Path(tempfile.mkdtemp(prefix="trawl-bench-"))
    results: dict[int, list[RunResult]] = {}
    follow_all = ns.follow_all or ns.web == "realistic"
    web_spec = WebSpec(
        web=ns.web,
        hosts=ns.hosts,
        seeds=ns.seeds,
        corpus_fraction=ns.corpus_fraction,
        min_pages=ns.min_pages,
        max_pages=ns.max_pages,
        corpus_dir=ns.corpus_dir,
        options=tuple(ns.web_option),
    )
    try:
        with TestWebProcess(web_spec, root / "testweb") as web:
            print(
                f"{_web_line(ns, web)}; pid {web.pid}, ports {web.ports}; crawl: delay {ns.delay:g}s, WARC "
                f"{'on' if ns.warc else 'off'}, robots on, follow {'all links' if follow_all else 'model links'}, "
                f"{ns.warmup:g}s warm-up + {ns.seconds:g}s window",
                flush=True,
            )
            for size in sizes:
                spec = CrawlSpec(
                    warmup=ns.warmup,
                    window=ns.seconds,
                    delay=ns.delay,
                    fetchers=ns.fetchers,
                    parsers=ns.parsers,
                    concurrency=ns.concurrency,
                    warc=ns.warc,
                    follow_all=follow_all,
                    preload=size,
                    expected_urls=max(ns.expected_urls, 2 * size),
                    extra=tuple(ns.crawl_arg),
                )
                for i in range(ns.runs):
                    print(f"run {i + 1}/{ns.runs}" + (f", preload {size:,}" if size else "") + ":", flush=True)
                    result = run_once(web, spec, root / f"p{size}-run{i}", log=lambda m: print("  " + m, flush=True))
                    results.setdefault(size, []).append(result)
                    print(describe(result), flush=True)
                print(("" if not size else f"preload {size:,}: ") + summary(results[size]), flush=True)
    finally:
        if ns.json is not None:
            data = {"machine": info, "args": {k: str(v) for k, v in vars(ns).items()}}
            data["runs"] = {str(k): [r.as_dict() for r in v] for k, v in results.items()}
            ns.json.write_text(json.dumps(data, indent=1))
        if ns.workdir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0
