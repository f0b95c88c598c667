"""The web dashboard in real headless Chromium (Debian's ``/usr/bin/chromium`` driven by Playwright).

A shared crawl of the chaos web runs to its end with ``trawl node --keep-running --ui-port``, then stays up: its
figures are final, so what the page shows must equal what ``trawl status --json`` prints, number for number. The same
is checked for ``trawl status --serve`` (the whole crawl's dashboard). The pages are screenshotted (while crawling
and at the end); with ``TRAWL_UPDATE_SCREENSHOTS=1`` the one taken while crawling replaces ``docs/dashboard.png``
(the README's).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.node.clusterrun import NodeRun, trawl
from tests.node.crawlrun import free_port, quick_args, wait_until
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl_testweb import TestWeb

playwright_api = pytest.importorskip("playwright.sync_api", reason="Playwright (dev dependency) drives Chromium")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[str]:
    """A Redis of its own: the shared crawl uses the default prefix, which the session server's tests may not."""
    server = EmbeddedRedis(tmp_path / "redis").start()
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium package is not installed")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def status_json(url: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(trawl("status", "--redis", url, "--json").stdout)
    return data


def figures(page: Any) -> dict[str, str]:
    found: dict[str, str] = page.eval_on_selector_all(
        "[data-figure]", "els => Object.fromEntries(els.map(e => [e.dataset.figure, e.textContent]))"
    )
    return found


def table(page: Any, table_id: str) -> list[list[str]]:
    rows: list[list[str]] = page.eval_on_selector_all(
        f"#{table_id} tr", "rows => rows.slice(1).map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    return [row for row in rows if row != ["none"]]


def as_int(text: str) -> int:
    return int(text.replace(",", ""))


def open_fresh(browser: Any, url: str, since: float) -> Any:
    """The page, once it has drawn a document published after ``since`` (unix seconds) with its plots."""
    page = browser.new_page(bypass_csp=True, viewport={"width": 1400, "height": 1300})
    page.goto(url)
    page.wait_for_function(f"Number(document.body.dataset.at || 0) > {since}", timeout=30_000)
    page.wait_for_function("document.querySelectorAll('.uplot canvas').length === 3", timeout=30_000)
    return page


def assert_page_matches_status(page: Any, report: dict[str, Any]) -> None:
    shown = figures(page)
    counters = report["counters"]
    assert as_int(shown["fetched"]) == counters["fetched"] > 0
    assert as_int(shown["stored"]) == counters["stored"]
    assert as_int(shown["queued"]) == counters.get("queued", 0)
    assert as_int(shown["inflight"]) == counters.get("inflight", 0)
    assert as_int(shown["ready"]) == report["ready_hosts"]
    assert as_int(shown["waiting"]) == report["waiting_hosts"]
    assert as_int(shown["errors"]) == sum(n for _, n in report["errors"])
    assert shown["success"] == f"{report['progress']['success_rate'] * 100:.1f}%"
    assert [[r, as_int(n)] for r, n in table(page, "t-errors")] == report["errors"]
    assert [[r, as_int(n)] for r, n in table(page, "t-dropped")] == report["dropped"]
    nodes = {row[0]: (row[1], as_int(row[2])) for row in table(page, "t-nodes")}
    assert nodes == {n["id"]: (n["state"], n["fetched"]) for n in report["nodes"]}


def eventually_matches(page: Any, report: dict[str, Any], timeout: float = 30.0) -> None:
    """The page polls every second and slower parts (the node list, the host sample) refresh every few seconds:
    wait until the page has caught up with the final figures, then hold it to them."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            assert_page_matches_status(page, report)
            return
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            page.wait_for_timeout(250)


def test_the_dashboards_show_what_trawl_status_shows(
    chaos_web: TestWeb, private_redis: str, browser: Any, tmp_path: Path
) -> None:
    """Good hosts and the hostile ones: errors, drops, back-offs and parked hosts all have something to show."""
    assert chaos_web.chaos is not None
    url = private_redis
    seeds = [*chaos_web.seeds(2), chaos_web.chaos.hub]
    trawl("seed", "--redis", url, *[arg for seed in seeds for arg in ("--url", seed)])
    ui_port, serve_port = free_port(), free_port()
    node = NodeRun(
        tmp_path / "node",
        [
            *quick_args(chaos_web),
            *("--redis", url, "--node-id", "dash-node", "--keep-running", "--ui-port", str(ui_port)),
        ],
    )
    serve = subprocess.Popen(
        [sys.executable, "-m", "webtrawl", "status", "--redis", url, "--serve", str(serve_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        # while crawling: the plots fill and the hostile hosts' errors show up (the README's screenshot)
        live = browser.new_page(bypass_csp=True, viewport={"width": 1400, "height": 1200})
        wait_until(lambda: _answers(ui_port), 60, "the node's dashboard to answer", node)
        live.goto(f"http://127.0.0.1:{ui_port}/")
        live.wait_for_function("document.querySelectorAll('#t-errors tr').length > 3", timeout=120_000)
        live.wait_for_function("document.querySelectorAll('.uplot canvas').length === 3", timeout=30_000)
        screenshot = tmp_path / "dashboard.png"
        live.screenshot(path=str(screenshot), full_page=True)
        assert screenshot.stat().st_size > 20_000
        if os.environ.get("TRAWL_UPDATE_SCREENSHOTS"):
            shutil.copy(screenshot, ROOT / "docs" / "dashboard.png")

        # the crawl is over (nothing queued or leased) and the node's heartbeat has caught up with the counters
        def settled() -> bool:
            report = status_json(url)
            counters = report["counters"]
            nodes = report["nodes"]
            return (
                report["finished"]
                and len(nodes) == 1
                and nodes[0]["fetched"] == counters["fetched"]
                and counters.get("stored", 0) == counters.get("added", -1)
            )

        wait_until(settled, 240, "the crawl to end and the node to report it", node)
        since = time.time()
        report = status_json(url)
        assert report["errors"] and report["dropped"]

        page = open_fresh(browser, f"http://127.0.0.1:{ui_port}/", since)
        assert page.title() == "webtrawl dash-node"
        eventually_matches(page, report)
        assert figures(page)["scope"] == "node dash-node"
        cells = [cell for row in table(page, "t-settings") for cell in row]
        settings = dict(zip(cells[0::2], cells[1::2], strict=True))
        assert settings["delay"] == "0.25" and settings["node_id"] == "dash-node" and "ui_token" not in settings
        procs = {row[0]: row for row in table(page, "t-procs")}
        assert {"supervisor", "fetcher", "parser"} <= set(procs)
        assert all(row[1] == "1" and row[3].endswith("MiB") for row in procs.values())
        page.screenshot(path=str(tmp_path / "dashboard-final.png"), full_page=True)

        cluster_page = open_fresh(browser, f"http://127.0.0.1:{serve_port}/", since)
        eventually_matches(cluster_page, report)
        assert figures(cluster_page)["scope"] == "cluster"
        assert figures(cluster_page)["progress"] == "100.0%"
        cluster_page.screenshot(path=str(tmp_path / "dashboard-cluster.png"), full_page=True)
    finally:
        serve.terminate()
        serve.wait(30)
        trawl("stop", "--redis", url)
        assert node.wait(120) == 0, node.log()[-3000:]
    assert "Traceback" not in node.log()


def _answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=5) as resp:
            return bool(json.loads(resp.read()).get("at"))
    except OSError:
        return False
