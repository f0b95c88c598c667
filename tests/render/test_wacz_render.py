"""``trawl export --to wacz:`` of a crawl that rendered pages: what a replay tool loads, checked with the
ecosystem's own validator (``wacz validate``) and by reading every index entry back from the package."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.node.crawlrun import Crawl, records
from tests.store.waczcheck import archived_records, index_entries, package_pages, records_at_entries
from webtrawl_testweb.jsweb import JsWeb, is_subresource

pytest.importorskip("wacz", reason="the wacz extra packages WACZ")
pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)


def test_a_rendered_crawl_packages_as_a_valid_wacz_with_its_dom_and_subresources(tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    with JsWeb(items=2, screens=2, plain_pages=1) as web:
        args = [*web.crawl_args("127.0.0.1/32"), "--delay", "0.1", "--fetchers", "1", "--parsers", "1"]
        crawl = Crawl(out, [web.url("app.js.test"), *args, "--render", "always"])
        assert crawl.wait(240) == 0, crawl.log()[-4000:]
        home = web.url("app.js.test")
        items = web.app_urls()[1:]
    package = tmp_path / "crawl.wacz"
    cmd = [sys.executable, "-m", "webtrawl", "export", "--out", str(out), "--to", f"wacz:{package}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "as " + str(package) in done.stdout
    valid = subprocess.run([sys.executable, "-m", "wacz", "validate", "-f", str(package)], capture_output=True)
    assert valid.returncode == 0 and b"is valid" in valid.stdout, valid.stdout

    entries = index_entries(package)
    found = records_at_entries(package, entries)  # every entry points at a record of its URL in archive/
    types = {(url, kind) for url, kind, _ in found}
    # The rendered page: its response indexed, and its DOM after the scripts ran (the resource record) in the
    # package's WARC but not in the index (where it would take the response's place in a replay); the requests its
    # scripts made, each indexed; every page the crawl fetched is listed as a page, no subresource is.
    assert (home, "response") in types and not any(kind == "resource" for _, kind, _ in found)
    dom = next(body for url, kind, body in archived_records(package) if url == "urn:dom:" + home and kind == "resource")
    assert all(f'href="{urlsplit(url).path}"'.encode() in dom for url in items), "the DOM has the app's links"
    subresources = {url for url, kind, _ in found if kind == "response" and is_subresource(urlsplit(url).path)}
    assert any("/static/" in url for url in subresources) and any("/api/" in url for url in subresources)
    html_pages = {r["url"] for r in records(out) if r["status"] == 200 and r["content_type"].startswith("text/html")}
    assert {home, *items} <= html_pages
    assert package_pages(package) == html_pages
