"""JavaScript pages end to end: the real ``trawl crawl`` renders pages of :class:`JsWeb` in real headless Chromium
(Debian's ``chromium`` through Playwright).

What a user relies on is checked where it is visible: the JS web's access log (every page and its scripts' requests,
politeness with a render counted as one visit, nothing disallowed fetched), the trap listener on 127.0.0.2 (never
connected to), the JSONL records (``rendered``, the reason, the links found in the rendered DOM) and the WARC files
read back with warcio. Each crawl uses ``--ip-allow 127.0.0.1/32``: 127.0.0.2 is the refused address.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.node.crawlrun import Crawl, records, wait_until
from webtrawl_testweb.accesslog import LogEntry, politeness_violations
from webtrawl_testweb.jsweb import JsWeb, is_subresource

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)

DELAY = 0.3
SCROLLS = 3


@pytest.fixture(scope="module")
def jsweb() -> Iterator[JsWeb]:
    with JsWeb(items=3, screens=8, plain_pages=2) as web:
        yield web


def _args(web: JsWeb, *extra: str) -> list[str]:
    return [
        *web.crawl_args("127.0.0.1/32"),
        *("--delay", str(DELAY), "--fetchers", "1", "--parsers", "1", "--renderers", "2"),
        *("--backoff-base", "0.2", "--robots-retry", "0.2"),
        *extra,
    ]


def _visits(entries: list[LogEntry]) -> list[LogEntry]:
    """The requests of each host grouped into visits: a page with the requests its render made after it (the
    render's scripts and data, under /static/ and /api/). Within a visit requests never overlap."""
    by_host: dict[str, list[LogEntry]] = defaultdict(list)
    for e in entries:
        by_host[e.host].append(e)
    visits = []
    for items in by_host.values():
        items.sort(key=lambda e: e.start_ms)
        current: LogEntry | None = None
        for e in items:
            if current is not None and is_subresource(e.path):
                assert e.start_ms >= current.end_ms, f"two requests of one render at once: {e}"
                current = LogEntry(current.start_ms, e.end_ms, e.host, e.port, e.scheme, "GET", current.path, 200, 0)
                continue
            if current is not None:
                visits.append(current)
            current = e
        if current is not None:
            visits.append(current)
    return visits


def _by_url(out: Path) -> dict[str, dict[str, Any]]:
    rows = records(out)
    urls = [row["url"] for row in rows]
    assert len(urls) == len(set(urls)), "one record per URL"
    return {row["url"]: row for row in rows}


def _warc(out: Path) -> dict[str, list[tuple[str, bytes]]]:
    """Record type -> (target URI, block) of every record, read with warcio (digests checked)."""
    found: dict[str, list[tuple[str, bytes]]] = defaultdict(list)
    for path in sorted((out / "warc").glob("*.warc.gz*")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                found[record.rec_type].append((uri, record.content_stream().read()))
    return found


def _replayed(out: Path) -> dict[str, dict[str, Any]]:
    """URL -> the index entry a replay tool serves for it from the crawl's WARC files (pywb's collection index,
    built by cdxj-indexer, as ``wb-manager add`` builds it): the first of the URL's latest capture, in index order."""
    warcs = [str(path) for path in sorted((out / "warc").glob("*.warc.gz"))]
    run = "import sys; from cdxj_indexer.main import main; main(sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", run, *warcs], capture_output=True, text=True, timeout=120, check=True)
    served: dict[str, tuple[str, dict[str, Any]]] = {}
    for line in sorted(done.stdout.splitlines()):
        _, stamp, block = line.split(" ", 2)
        entry = json.loads(block)
        if entry["url"] not in served or stamp > served[entry["url"]][0]:
            served[entry["url"]] = (stamp, entry)
    return {url: entry for url, (_, entry) in served.items()}


def test_rendered_pages_links_scroll_and_refusals(jsweb: JsWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    # the scroll host over HTTPS (the browser is answered by the crawler's client, which checks the test CA)
    seeds = [jsweb.url("app.js.test"), jsweb.url("scroll.js.test", scheme="https"), jsweb.url("evil.js.test")]
    mark = jsweb.log.mark()
    trap_before = len(jsweb.trap_hits)
    # --render-allow-hosts 127.0.0.2: the host rule lets the script's request through, the address policy must not
    args = _args(jsweb, "--render", "always", "--render-scrolls", str(SCROLLS), "--render-allow-hosts", "127.0.0.2")
    crawl = Crawl(out, [*seeds, *args])
    assert crawl.wait(240) == 0, crawl.log()[-4000:]
    entries = jsweb.entries(since=mark)
    rows = _by_url(out)

    # The links exist only after app.js ran: every item page was found in a rendered DOM and crawled.
    for url in jsweb.app_urls():
        assert rows[url]["status"] == 200 and rows[url]["rendered"] is True, rows.get(url)
        assert rows[url]["render_reason"] == "always"
    assert rows[jsweb.url("app.js.test")]["title"] == "App home"
    assert rows[jsweb.url("app.js.test")]["outlinks"] == jsweb.items
    assert rows[jsweb.url("app.js.test", "/item/2")]["title"] == "Item 2"
    assert rows[jsweb.url("plain.js.test")]["status"] == 200  # linked from item 1's script-built list

    # Infinite scroll: screen 0 and one more per scroll, no further.
    posts = {url for url in rows if "/post/" in url}
    expected = {f"/post/{k}-{i}" for k in range(SCROLLS + 1) for i in range(2)}
    assert posts == {jsweb.url("scroll.js.test", path, scheme="https") for path in expected}
    feed = [e.path for e in entries if e.host == "scroll.js.test" and e.path.startswith("/api/feed")]
    assert sorted(feed) == [f"/api/feed?screen={k}" for k in range(SCROLLS + 1)]

    # The evil page: its robots-disallowed path and the refused address were never requested, nor the other
    # host's script or the image; its allowed request was, and the page was built.
    evil = rows[jsweb.url("evil.js.test")]
    assert evil["render_blocked"] == {"robots": 1, "ip-policy": 1, "render-host": 1, "render-type": 1}
    assert rows[jsweb.url("evil.js.test", "/done")]["status"] == 200
    assert not [e for e in entries if e.path.startswith("/private/") or e.path.endswith(".png")]
    assert not [e for e in entries if e.host == "other.js.test"]
    assert len(jsweb.trap_hits) == trap_before, "a request reached the refused address 127.0.0.2"

    # Politeness: a render is one visit of its host; visits keep the gap, robots.txt comes first.
    assert politeness_violations(_visits(entries), DELAY) == []

    # WARC: the page's pair, its scripts' requests as received, the rendered DOM as a resource record.
    warc = _warc(out)
    responses = {uri for uri, _ in warc["response"]}
    assert jsweb.url("app.js.test", "/static/app.js") in responses
    assert jsweb.url("app.js.test", "/api/page/item/3") in responses
    home = jsweb.url("app.js.test")
    dom = dict(warc["resource"])["urn:dom:" + home]  # a URI of its own: see below
    assert b'href="/item/3"' in dom and b"<h1>App home</h1>" in dom
    # Replayed from the WARC files as they are (a pywb collection): each rendered page is served as captured, its
    # response, not the DOM snapshot (which, under the page's URL and time, came first in the index).
    replayed = _replayed(out)
    for url in [home, *jsweb.app_urls()]:
        assert replayed[url].get("status") == "200", replayed[url]


def test_auto_renders_shells_and_their_host_but_not_ordinary_pages(jsweb: JsWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    mark = jsweb.log.mark()
    crawl = Crawl(out, [jsweb.url("app.js.test"), jsweb.url("plain.js.test"), *_args(jsweb, "--render", "auto")])
    assert crawl.wait(240) == 0, crawl.log()[-4000:]
    rows = _by_url(out)
    home = rows[jsweb.url("app.js.test")]
    assert home["rendered"] is True and home["render_reason"] == "shell: noscript asks for JavaScript"
    for url in jsweb.app_urls():
        assert rows[url]["rendered"] is True, rows[url]  # remembered for the host (or a shell itself)
    plain = [url for url in rows if "plain.js.test" in url]
    assert len(plain) == 1 + jsweb.plain_pages
    for url in plain:
        assert rows[url]["status"] == 200 and "rendered" not in rows[url], rows[url]
    entries = jsweb.entries(since=mark)
    pages = [e.path for e in entries if e.host == "app.js.test" and not is_subresource(e.path)]
    assert sorted(pages) == sorted(["/robots.txt", "/", *(f"/item/{k}" for k in range(1, jsweb.items + 1))])
    assert politeness_violations(_visits(entries), DELAY) == []


def test_a_page_past_its_memory_budget_fails_once_and_the_crawl_goes_on(jsweb: JsWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    mark = jsweb.log.mark()
    args = _args(jsweb, "--render", "always", "--render-page-memory", "32")  # the page keeps 128 MiB of arrays
    crawl = Crawl(out, [jsweb.url("mem.js.test"), jsweb.url("plain.js.test"), *args])
    assert crawl.wait(240) == 0, crawl.log()[-4000:]
    rows = _by_url(out)
    mem = rows[jsweb.url("mem.js.test")]
    assert mem["error"] == "render-memory" and "--render-page-memory (32 MiB)" in mem["error_detail"], mem
    assert mem["retries"] == 0 and "rendered" not in mem
    pages = [e.path for e in jsweb.entries(since=mark) if e.host == "mem.js.test"]
    assert sorted(pages) == ["/", "/robots.txt"]  # fetched once: not retried
    plain = [row for url, row in rows.items() if "plain.js.test" in url]  # the same browser renders on
    assert len(plain) == 1 + jsweb.plain_pages and all(row["rendered"] is True for row in plain), plain


def _browsers(crawl: Crawl) -> list[psutil.Process]:
    """The Chromium main processes of the crawl's fetchers (children of each fetcher's Playwright driver)."""
    found = []
    for name, pid in crawl.children().items():
        if not name.startswith("fetcher") or not psutil.pid_exists(pid):
            continue
        for proc in psutil.Process(pid).children(recursive=True):
            try:
                if "chrom" in proc.name() and "chrom" not in proc.parent().name():
                    found.append(proc)
            except psutil.NoSuchProcess:
                continue
    return found


def test_kill_9_of_the_browser_then_of_its_fetcher_mid_crawl_loses_nothing(tmp_path: Path) -> None:
    with JsWeb(items=14) as web:
        out = tmp_path / "crawl"
        crawl = Crawl(out, [web.url("app.js.test"), *_args(web, "--render", "always", "--renderers", "1")])

        def rendered(count: int) -> bool:
            return sum(1 for r in records(out) if r.get("rendered")) >= count and bool(_browsers(crawl))

        # The browser dies mid-crawl: the render in progress fails and is retried, the browser starts again.
        wait_until(lambda: rendered(1), 120, "a first render", crawl)
        for proc in _browsers(crawl):
            os.kill(proc.pid, signal.SIGKILL)
        # Then the fetcher that owns the browser: it is restarted, takes back its leases, and no browser is left.
        wait_until(lambda: rendered(5), 120, "five renders", crawl)
        orphans = _browsers(crawl)
        os.kill(crawl.children()["fetcher-0"], signal.SIGKILL)
        assert crawl.wait(240) == 0, crawl.log()[-4000:]
        rows = _by_url(out)
        for url in web.app_urls():
            assert rows[url]["rendered"] is True and rows[url]["status"] == 200, rows.get(url)
        log = "\n".join(p.read_text(errors="replace") for p in (out / "logs").glob("*"))
        assert "starting Chromium again" in log
        wait_until(
            lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in orphans),
            30,
            "the dead fetcher's browser to exit",
        )


def test_rendering_without_chromium_is_one_clear_error(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "webtrawl", "crawl", "http://app.js.test/", "--out", str(tmp_path / "c"),
         "--render", "auto", "--chromium", str(tmp_path / "no-such-chromium")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode != 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("trawl: error:")]
    assert len(errors) == 1 and "--chromium" in errors[0], result.stderr
