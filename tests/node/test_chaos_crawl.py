"""End to end against the hostile web: the real ``trawl crawl`` over good hosts mixed with every chaos behaviour.

The crawl must end by itself (no hang, no crash, no traceback), stay polite and obey robots.txt on every host,
crawl the good hosts completely, give every chaos URL the outcome :meth:`ChaosWeb.expected` names, keep the sum of
its processes' memory under a bound, send DNS questions only to the test web's own server (and none at all for
``.invalid``), and account for every URL it discovered: each link of each stored page is either in a record
(fetched, or failed with a reason) or in the dropped stream (not followed, with a reason).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.node.crawlrun import Crawl, records, stats
from webtrawl.errors import WebtrawlError
from webtrawl.formats import canonicalize
from webtrawl.formats.encoding import choose_encoding
from webtrawl.parse.decompress import content_codings, decompress
from webtrawl.parse.html import extract
from webtrawl_testweb import TestWeb, WebOptions, fetched_urls, politeness_violations, robots_first_violations
from webtrawl_testweb.chaos import BEHAVIOURS, DNS_RECORDS, ChaosWeb

DELAY = 0.25
MAX_RETRIES = 2
HOST_BUDGET = 40
QUERY_VARIANTS = 10
PEAK_RSS_BOUND = 1024 * 1024 * 1024  # supervisor + 2 fetchers + 2 parsers + Redis; measured ~560 MiB


def _args(web: TestWeb) -> list[str]:
    return [
        *web.crawl_args(),
        *("--delay", str(DELAY), "--fetchers", "2", "--parsers", "2", "--concurrency", "64"),
        *("--connect", "2", "--total", "3", "--robots", "2", "--robots-retry", "0.2", "--robots-give-up", "3"),
        *("--max-retries", str(MAX_RETRIES), "--backoff-base", "0.2", "--backoff-max", "2"),
        # the err500/err503 hosts' 3 pages each use all their tries (the table's http-5xx): none is parked before,
        # which would give the last one up as host-down (tests/node/test_host_down_crawl.py)
        *("--park-after", str(3 * (MAX_RETRIES + 1))),
        *("--host-budget", str(HOST_BUDGET), "--max-query-variants", str(QUERY_VARIANTS)),
    ]


class _PeakRss:
    """Samples the summed RSS of a crawl's process tree (node, children, its Redis) until stopped."""

    def __init__(self, crawl: Crawl) -> None:
        self.crawl = crawl
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(0.1)

    def _sample(self) -> int:
        try:
            root = psutil.Process(self.crawl.proc.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return 0
        pidfile = self.crawl.out / "redis" / "redis.pid"
        with contextlib.suppress(OSError, ValueError, psutil.Error):
            procs.append(psutil.Process(int(pidfile.read_text().strip())))
        total = 0
        for proc in procs:
            try:
                total += int(proc.memory_info().rss)
            except psutil.Error:
                continue
        return total

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def _dropped(out: Path) -> list[dict[str, Any]]:
    rows = []
    for path in sorted((out / "dropped").glob("*.jsonl*")):
        rows.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    return rows


def _discovered(out: Path) -> Iterator[tuple[str, str]]:
    """(parent, canonical link) for every link of every stored 2xx HTML page, re-read from the WARC files."""
    for path in sorted((out / "warc").glob("*.warc.gz*")):
        with path.open("rb") as stream:
            for rec in ArchiveIterator(stream):
                if rec.rec_type != "response":
                    continue
                url = rec.rec_headers.get_header("WARC-Target-URI")
                status = int(rec.http_headers.get_statuscode())
                body = rec.raw_stream.read()  # as received: still content-encoded
                ctype = rec.http_headers.get_header("Content-Type") or ""
                if status >= 300 or "html" not in ctype:
                    continue
                codings = content_codings([rec.http_headers.get_header("Content-Encoding") or ""])
                try:
                    payload = decompress(body, codings, 50 * 1024 * 1024)
                except WebtrawlError:
                    continue
                codec, _, bom = choose_encoding(payload, ctype)
                found = extract(payload[bom:].decode(codec, "replace"), "webtrawl")
                if "nofollow" in found.robots:
                    continue  # a nofollow page's links are recorded as dropped, checked by reason below
                for href, _ in found.links:
                    try:
                        yield url, canonicalize(href, url)
                    except WebtrawlError:
                        continue


@pytest.fixture(scope="module")
def chaos_web() -> Iterator[TestWeb]:
    options = WebOptions(corpus_fraction=0.0, crawl_delay=0.5)
    with TestWeb(40, 3, options=options, corpus_dir=None, chaos=True) as web:
        yield web


def test_the_hostile_web_is_crawled_to_the_end_with_nothing_lost(chaos_web: TestWeb, tmp_path: Path) -> None:
    web = chaos_web
    chaos = web.chaos
    assert isinstance(chaos, ChaosWeb) and web.dns is not None
    good_seeds = web.seeds(3)
    mark = web.mark()
    out = tmp_path / "crawl"
    started = time.monotonic()
    crawl = Crawl(out, [*good_seeds, chaos.hub, *_args(web)])
    sampler = _PeakRss(crawl)
    code = crawl.wait(180)
    peak = sampler.stop()
    took = time.monotonic() - started
    log = crawl.log()
    assert code == 0, log[-4000:]
    assert "Traceback" not in log, log[-4000:]
    (out.parent / "chaos-report.txt").write_text(f"peak RSS {peak} bytes, {took:.1f}s\n")
    print(f"chaos crawl: {took:.1f}s, peak RSS of the node's processes {peak / 2**20:.0f} MiB")
    assert peak < PEAK_RSS_BOUND

    rows = records(out)
    by_url = {row["url"]: row for row in rows}
    assert len(by_url) == len(rows), "a URL has two records"
    dropped = _dropped(out)
    dropped_urls = {(row["url"], row["reason"]) for row in dropped}

    # Every chaos URL the hub names ends the way the behaviour table says.
    wrong = {}
    for url, expect in {**chaos.expected(), **_hostile(chaos)}.items():
        if expect.startswith("drop:"):
            if (url, expect[5:]) not in dropped_urls:
                wrong[url] = (expect, [r for u, r in dropped_urls if u == url], by_url.get(url, {}).get("error"))
        elif url not in by_url or (by_url[url]["error"] or "") != expect:
            wrong[url] = (expect, by_url.get(url, {}).get("error", "no record"))
    assert wrong == {}
    for b in BEHAVIOURS.values():
        if b.title:
            assert by_url[chaos.url(b.name)]["title"] == b.title, b.name

    # Redirects: a chain stops at the hop limit, private targets are dropped, off-host targets are followed.
    assert (chaos.url("redirect-chain", "/hop/6"), "redirect-limit") in dropped_urls
    assert (f"http://10.0.0.1:{chaos.http_port}/admin", "ip-policy") in dropped_urls
    assert by_url[chaos.url("plain", "/from-offhost")]["status"] == 404
    assert by_url[f"http://intranet.chaos-dns.example:{chaos.http_port}/"]["error"] == "ip-policy"

    # Traps stay small: each is cut by its own guard and the host budget.
    reasons = Counter(row["reason"] for row in dropped)
    assert reasons["trap-repeat"] >= 1 and reasons["trap-query"] >= 1 and reasons["budget"] >= 1
    per_host = Counter(row["url"].split("/")[2] for row in rows)
    for name in ("calendar", "repeat", "session", "query"):
        assert per_host[f"{name}.chaos.test:{chaos.http_port}"] <= HOST_BUDGET

    # The server's view: polite everywhere, robots.txt first and obeyed, bounded retries on failing hosts.
    entries = web.entries(since=mark)
    assert politeness_violations(entries, DELAY, web.model.crawl_delays()) == []
    assert robots_first_violations(entries) == []
    fetched = fetched_urls(entries)
    for url in (chaos.url("robots-huge", "/secret"), chaos.url("robots-redirect", "/private")):
        assert url not in fetched
    assert not any(url.startswith(chaos.url("robots-timeout", "/")) for url in fetched)
    requests = Counter(e.host for e in entries if e.path not in ("/robots.txt", "/rules.txt"))
    for b in BEHAVIOURS.values():
        if b.name.startswith("err"):
            urls = 1 + len(b.extra)
            retried = b.expect == "http-5xx" or b.name == "err429"
            assert requests[f"{b.name}.chaos.test"] <= urls * (1 + MAX_RETRIES if retried else 1), b.name
    for name in ("err503-retry-after", "err429"):  # Retry-After: 1 is honoured between every two requests
        host_entries = [e for e in entries if e.host == f"{name}.chaos.test" and e.path != "/robots.txt"]
        assert len(host_entries) > 1 and politeness_violations(host_entries, 1.0) == []

    # The good hosts are crawled completely.
    expected = web.model.expected_crawl(good_seeds)
    good = {url for url in fetched if web.model.is_known(url)}
    assert good == set(expected.fetched)
    assert not fetched & set(expected.disallowed)

    # DNS: only the test web's server was asked, and never for a reserved name.
    asked = set(web.dns.asked)
    assert asked <= {*DNS_RECORDS, "nxdomain.chaos-dns.example"}
    assert {"internal.chaos-dns.example", "nxdomain.chaos-dns.example"} <= asked
    # A name that does not resolve is given up at its first try, and its records say so (not "5 times in a row").
    nxdomain = [row for row in rows if "//nxdomain.chaos-dns.example" in row["url"]]
    assert nxdomain and {row["error"] for row in nxdomain} == {"dns"}
    assert all("unreachable (dns)" in row["error_detail"] for row in nxdomain), nxdomain[0]["error_detail"]

    # Accounting: every link of every stored page is in a record or in the dropped stream.
    accounted = set(by_url) | {url for url, _ in dropped_urls}
    lost = {(parent, url) for parent, url in _discovered(out) if url not in accounted}
    assert lost == set()
    counters = stats(out)["counters"]
    assert counters["stored"] == len(rows) == counters["added"]
    assert counters["queued"] == 0 and counters["inflight"] == 0
    for reason in ("timeout", "reset", "too-large", "bomb", "tls", "dns", "http-4xx", "http-5xx"):
        assert counters.get(f"err:{reason}", 0) > 0, reason
    for reason in ("robots", "trap-repeat", "trap-query", "budget", "ip-policy", "port-policy", "scheme"):
        assert counters.get(f"drop:{reason}", 0) > 0, reason
    assert "hunter2" not in log and not any("hunter2" in row.get("error_detail", "") for row in rows)
    text = subprocess.run(
        [sys.executable, "-m", "webtrawl", "stats", "--out", str(out)], capture_output=True, text=True, check=True
    ).stdout
    (out.parent / "chaos-stats.txt").write_text(text)
    print(text)


def _hostile(chaos: ChaosWeb) -> dict[str, str]:
    """The hub's hostile links by the URL the crawler records them under (canonical, or raw for other schemes)."""
    out = {}
    for href, expect in chaos.hostile_links().items():
        try:
            out[canonicalize(href, chaos.hub)] = expect
        except WebtrawlError:
            out[href] = expect
    return out
