"""Scrapy and webtrawl on the same local test web, side by side: pages per CPU-second of each crawler.

    .venv/bin/pip install -e './testweb[bench]'
    .venv/bin/python benchmarks/compare_scrapy.py [--web realistic|synthetic] [--runs 3] [--warmup 60] [--seconds 60]

Both crawlers get the same test web (its own process, CPU not counted), the same seeds, the same per-host delay,
one request per host at a time, robots.txt obeyed, and the same links followed: on the realistic web (the
default, see ``webtrawl_testweb.realistic``) every link, on the synthetic web the model's links (see
``webtrawl_bench.MODEL_URLS``); nofollow honoured. Each runs ``--warmup`` seconds, then ``--seconds`` are measured:
pages = HTTP responses other than robots.txt, CPU = user + system time of every process of the crawler
(webtrawl: supervisor, fetchers, parsers and its Redis; Scrapy: its one process). Scrapy uses the broad-crawl
settings of its documentation and writes (url, status, title) items to JSONL; webtrawl also writes WARC.

Scrapy never leaves 127.0.0.0/8: its DNS resolver answers only ``*.test`` (with 127.0.0.1) and a downloader
middleware drops every request whose host is not ``*.test`` or whose port is not one of the test web's. Scrapy
does not verify TLS certificates by default (webtrawl does, against the test web's CA); that is left as Scrapy's
default and noted in the results.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil

from webtrawl_bench import MODEL_URLS, CrawlSpec, TestWebProcess, WebSpec
from webtrawl_bench.cli import machine
from webtrawl_bench.crawl_run import RunResult, run_once
from webtrawl_bench.probe import median_us, probe_us
from webtrawl_bench.procstat import NODE_TOTAL
from webtrawl_bench.testweb_proc import DEFAULT_HOSTS, WEBS

# --- the Scrapy side (runs in a child process: ``compare_scrapy.py _scrapy ARGS``) --------------------------------


def _scrapy_main(info_path: Path, out: Path, delay: float, budget: float, concurrency: int) -> None:
    from scrapy import Request, Spider, signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.exceptions import IgnoreRequest
    from scrapy.http import Response, TextResponse
    from scrapy.linkextractors import LinkExtractor
    from twisted.internet import defer, task
    from twisted.internet.error import DNSLookupError
    from twisted.internet.interfaces import IResolverSimple
    from zope.interface import implementer

    info = json.loads(info_path.read_text())
    ports = {int(info["http_port"]), int(info["https_port"])}

    @implementer(IResolverSimple)
    class TestResolver:
        """``*.test`` is 127.0.0.1; every other name fails (no query ever leaves the machine)."""

        def __init__(self, reactor: Any) -> None:
            self.reactor = reactor

        @classmethod
        def from_crawler(cls, crawler: Any, reactor: Any) -> TestResolver:
            return cls(reactor)

        def install_on_reactor(self) -> None:
            self.reactor.installResolver(self)

        def getHostByName(self, name: str, timeout: Any = ()) -> Any:  # Twisted's interface
            if name.lower().endswith(".test"):
                return defer.succeed("127.0.0.1")
            return defer.fail(DNSLookupError(name))

    class OnlyTestWeb:
        """Drops any request that is not for a ``*.test`` host on a test web port."""

        def process_request(self, request: Request, spider: Spider | None = None) -> None:
            parts = urlsplit(request.url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            if not (parts.hostname or "").endswith(".test") or port not in ports:
                raise IgnoreRequest(f"outside the test web: {request.url}")

    class Progress:
        """Writes the response counters to a file every half second, for the parent's measurement window."""

        def __init__(self, crawler: Any) -> None:
            self.crawler = crawler
            self.loop = task.LoopingCall(self.write)
            crawler.signals.connect(self.opened, signal=signals.spider_opened)
            crawler.signals.connect(self.closed, signal=signals.spider_closed)

        @classmethod
        def from_crawler(cls, crawler: Any) -> Progress:
            return cls(crawler)

        def opened(self, spider: Spider) -> None:
            self.loop.start(0.5)

        def closed(self, spider: Spider) -> None:
            self.write()
            if self.loop.running:
                self.loop.stop()

        def write(self) -> None:
            stats = self.crawler.stats
            data = {
                "t": time.time(),
                "responses": stats.get_value("downloader/response_count", 0),
                "robots": stats.get_value("robotstxt/response_count", 0),
                "items": stats.get_value("item_scraped_count", 0),
            }
            tmp = out / "progress.tmp"
            tmp.write_text(json.dumps(data))
            tmp.replace(out / "progress.json")

    allow = () if info.get("web") == "realistic" else MODEL_URLS
    links = LinkExtractor(allow=allow, tags=("a", "area"), attrs=("href",), canonicalize=False, unique=True)

    class FollowAll(Spider):  # type: ignore[misc]
        name = "followall"
        start_urls = info["seeds"]

        def parse(self, response: Response) -> Any:
            title = ""
            if isinstance(response, TextResponse):
                title = " ".join((response.css("title::text").get() or "").split())
            yield {"url": response.url, "status": response.status, "title": title}
            if not isinstance(response, TextResponse) or response.status != 200:
                return
            robots = " ".join(response.xpath('//meta[@name="robots"]/@content').getall()).lower()
            robots += response.headers.get(b"X-Robots-Tag", b"").decode("latin-1").lower()
            if "nofollow" in robots or "none" in robots:
                return
            for link in links.extract_links(response):
                if not link.nofollow:
                    yield response.follow(link.url, callback=self.parse)

    settings = {
        "USER_AGENT": "webtrawl/0.1 (Scrapy comparison)",  # the same robots.txt groups apply as to webtrawl
        "ROBOTSTXT_OBEY": True,
        "ROBOTSTXT_USER_AGENT": "webtrawl",
        "CONCURRENT_REQUESTS": concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": delay,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "DOWNLOAD_TIMEOUT": 60,
        "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
        # broad crawls (Scrapy docs, "Broad Crawls")
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "REACTOR_THREADPOOL_MAXSIZE": 20,
        "LOG_LEVEL": "INFO",
        "COOKIES_ENABLED": False,
        "RETRY_ENABLED": False,
        "REDIRECT_ENABLED": True,
        "AJAXCRAWL_ENABLED": False,
        "DEPTH_PRIORITY": 1,
        "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        # every response becomes an item, like webtrawl's one JSONL record per URL
        "HTTPERROR_ALLOW_ALL": True,
        "FEEDS": {str(out / "items.jsonl"): {"format": "jsonlines"}},
        "TWISTED_DNS_RESOLVER": f"{__name__}.TestResolver",
        "DOWNLOADER_MIDDLEWARES": {f"{__name__}.OnlyTestWeb": 1},
        "EXTENSIONS": {f"{__name__}.Progress": 0},
        "TELNETCONSOLE_ENABLED": False,
        "CLOSESPIDER_TIMEOUT": budget,
    }
    module = sys.modules[__name__]
    for cls in (TestResolver, OnlyTestWeb, Progress):
        setattr(module, cls.__name__, cls)
    process = CrawlerProcess(settings)
    process.crawl(FollowAll)
    process.start()


# --- the parent: measurement ----------------------------------------------------------------------------------


class ScrapyResult:
    def __init__(
        self, seconds: float, pages: int, cpu: float, peak_rss: int, items: int, robots: int = 0, probe: float = 0.0
    ) -> None:
        self.seconds, self.pages, self.cpu, self.peak_rss, self.items = seconds, pages, cpu, peak_rss, items
        self.robots = robots
        self.probe_us = probe  # the machine's speed in the window (webtrawl_bench.probe), as webtrawl's run has it

    @property
    def pages_per_cpu_s(self) -> float:
        return self.pages / self.cpu if self.cpu else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "pages": self.pages,
            "pages_per_s": self.pages / self.seconds,
            "cpu_s": self.cpu,
            "ms_per_page": 1000 * self.cpu / max(1, self.pages),
            "pages_per_cpu_s": self.pages_per_cpu_s,
            "peak_rss": self.peak_rss,
            "items": self.items,
            "robots_requests": self.robots,
            "probe_us": self.probe_us,
        }


def _progress(path: Path) -> dict[str, Any]:
    while True:
        try:
            data: dict[str, Any] = json.loads(path.read_text())
            return data
        except (OSError, ValueError):
            time.sleep(0.05)


def run_scrapy(web: TestWebProcess, spec: CrawlSpec, workdir: Path) -> ScrapyResult:
    workdir.mkdir(parents=True, exist_ok=True)
    budget = spec.warmup + spec.window + 5
    concurrency = spec.concurrency * max(1, spec.fetchers or os.cpu_count() or 1)
    cmd = [
        sys.executable,
        __file__,
        "_scrapy",
        str(workdir.parent / "testweb" / "testweb.json"),
        str(workdir),
        repr(spec.delay),
        repr(budget),
        str(concurrency),
    ]
    with (workdir / "scrapy.log").open("wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    ps = psutil.Process(proc.pid)
    peak = 0

    def cpu_now() -> float:
        nonlocal peak
        times = ps.cpu_times()
        peak = max(peak, int(ps.memory_info().rss))
        return float(times.user + times.system)

    def wait(seconds: float, probes: list[float] | None = None) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise RuntimeError(f"scrapy exited early ({proc.returncode}); see {workdir / 'scrapy.log'}")
            cpu_now()
            if probes is not None:
                probes.append(probe_us())
            time.sleep(min(1.0, max(0.0, end - time.monotonic())))

    try:
        started = time.monotonic() + 300
        while not (workdir / "progress.json").is_file() or not _progress(workdir / "progress.json")["responses"]:
            if time.monotonic() > started:
                raise RuntimeError(f"scrapy fetched nothing in 300s; see {workdir / 'scrapy.log'}")
            wait(0.25)  # like webtrawl's, the warm-up starts with the first response
        wait(spec.warmup)
        c0, p0, t0 = cpu_now(), _progress(workdir / "progress.json"), time.monotonic()
        probes: list[float] = []
        wait(spec.window, probes)
        c1, p1, t1 = cpu_now(), _progress(workdir / "progress.json"), time.monotonic()
    finally:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    pages = (p1["responses"] - p1["robots"]) - (p0["responses"] - p0["robots"])
    robots = p1["robots"] - p0["robots"]
    return ScrapyResult(t1 - t0, pages, c1 - c0, peak, p1["items"] - p0["items"], robots, median_us(probes))


def _trawl_line(r: RunResult) -> str:
    return (
        f"webtrawl: {r.pages:,} pages in {r.seconds:.0f}s = {r.pages_per_s:.1f} pages/s, CPU {r.node_cpu():.1f}s "
        f"= {r.ms_per_page():.2f} ms/page = {r.pages / max(1e-9, r.node_cpu()):.1f} pages per CPU-second "
        f"(fetchers {r.ms_per_page('fetcher'):.2f}, parsers {r.ms_per_page('parser'):.2f}, redis "
        f"{r.ms_per_page('redis'):.2f}, supervisor {r.ms_per_page('supervisor'):.2f} ms/page; robots.txt "
        f"{r.robots_requests / max(1, r.pages):.3f}/page; peak RSS of all its processes at once "
        f"{r.peak_rss.get(NODE_TOTAL, 0) / 2**20:.0f} MiB; speed probe {r.probe_us:.0f} us)"
    )


def _scrapy_line(r: ScrapyResult) -> str:
    return (
        f"scrapy:   {r.pages:,} pages in {r.seconds:.0f}s = {r.pages / r.seconds:.1f} pages/s, CPU {r.cpu:.1f}s "
        f"= {1000 * r.cpu / max(1, r.pages):.2f} ms/page = {r.pages_per_cpu_s:.1f} pages per CPU-second "
        f"(robots.txt {r.robots / max(1, r.pages):.3f}/page; peak RSS {r.peak_rss / 2**20:.0f} MiB; speed probe "
        f"{r.probe_us:.0f} us)"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_scrapy":
        info, out, delay, budget, concurrency = argv[1:6]
        _scrapy_main(Path(info), Path(out), float(delay), float(budget), int(concurrency))
        return 0
    web_defaults, crawl_defaults = WebSpec(), CrawlSpec()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--web", choices=WEBS, default=web_defaults.web)
    ap.add_argument("--hosts", type=int, help="default: 40,000 realistic, 6,000 synthetic")
    ap.add_argument("--seeds", type=int, default=web_defaults.seeds, help="seed hosts of the realistic web")
    ap.add_argument("--corpus-fraction", type=float, default=web_defaults.corpus_fraction)
    ap.add_argument("--warmup", type=float, default=crawl_defaults.warmup)
    ap.add_argument("--seconds", type=float, default=crawl_defaults.window)
    ap.add_argument("--delay", type=float, default=crawl_defaults.delay)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--json", type=Path, help="write every run's numbers here")
    args = ap.parse_args(argv)
    info = machine()
    print(f"compare_scrapy: {info['date']}, git {info['git']}, {info['nproc']} x {info['cpu']}", flush=True)
    root = args.workdir or Path(tempfile.mkdtemp(prefix="compare-scrapy-"))
    hosts = args.hosts or DEFAULT_HOSTS[args.web]
    spec = CrawlSpec(warmup=args.warmup, window=args.seconds, delay=args.delay, follow_all=args.web == "realistic")
    web_spec = WebSpec(web=args.web, hosts=hosts, seeds=args.seeds, corpus_fraction=args.corpus_fraction)
    ratios: list[float] = []
    record: dict[str, Any] = {"machine": info, "args": {k: str(v) for k, v in vars(args).items()}, "runs": []}
    with TestWebProcess(web_spec, root / "testweb") as web:
        followed = "all links" if args.web == "realistic" else "model links"
        print(
            f"test web: {args.web}, {hosts} hosts, pid {web.pid}; delay {args.delay:g}s, {args.warmup:g}s warm-up + "
            f"{args.seconds:g}s measured, robots on, {followed} followed",
            flush=True,
        )
        for i in range(args.runs):
            s = run_scrapy(web, spec, root / f"scrapy{i}")
            print(f"run {i + 1}/{args.runs}\n  {_scrapy_line(s)}", flush=True)
            t = run_once(web, spec, root / f"trawl{i}")
            print(f"  {_trawl_line(t)}", flush=True)
            ratio = (t.pages / max(1e-9, t.node_cpu())) / max(1e-9, s.pages_per_cpu_s)
            ratios.append(ratio)
            print(f"  ratio of pages per CPU-second, webtrawl / scrapy: {ratio:.2f}x", flush=True)
            record["runs"].append({"scrapy": s.as_dict(), "webtrawl": t.as_dict(), "ratio": ratio})
    spread = ", ".join(f"{r:.2f}" for r in ratios)
    print(f"median ratio over {len(ratios)} run(s): {statistics.median(ratios):.2f}x ({spread})")
    if args.json is not None:
        args.json.write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
