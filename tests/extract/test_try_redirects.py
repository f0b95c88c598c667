"""``trawl try URL`` of a URL that redirects: it showed the 301 (no items, the target under "follow"), where
``scrapy shell`` and a crawl reach the page; it now follows as a crawl would and shows the page reached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.fixtures.status_site import StatusSite, site_fixture

_HOPS = {"/old": (301, b"/mid"), "/mid": (302, b"http://moved.test:{port}/new"), "/loop": (302, b"/loop")}


def _answer(site: StatusSite, host: str, path: str) -> tuple[int, bytes]:
    if path in _HOPS:
        status, location = _HOPS[path]
        return status, location.replace(b"{port}", str(site.port).encode())
    if path == "/away":  # to a port the crawl may not fetch
        return 302, b"http://moved.test:1/new"
    return 200, b"<html><h1>reached %s</h1></html>" % path.encode()


site = site_fixture(_answer)


def _try(site: StatusSite, tmp_path: Path, path: str, *more: str) -> dict[str, object]:
    rules = tmp_path / "r.toml"
    rules.write_text('[[rule]]\nurl = "."\n[rule.fields]\nh1 = "css:h1::text"\n')
    args = ["--extract", str(rules), "--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8"]
    args += ["--ports", str(site.port), *more, f"http://start.test:{site.port}{path}"]
    done = subprocess.run([sys.executable, "-m", "webtrawl", "try", *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    parsed: dict[str, object] = json.loads(line)
    return parsed


def test_try_follows_a_urls_redirects_to_the_page_they_lead_to(site: StatusSite, tmp_path: Path) -> None:
    port = site.port
    line = _try(site, tmp_path, "/old")
    assert line["url"] == f"http://moved.test:{port}/new" and line["status"] == 200
    assert line["items"] == [{"h1": "reached /new"}]
    assert line["redirects"] == [f"http://start.test:{port}/old", f"http://start.test:{port}/mid"]
    assert [path for _, path in site.requests if path != "/robots.txt"] == ["/old", "/mid", "/new"]


def test_try_stops_at_a_redirect_a_crawl_would_not_follow(site: StatusSite, tmp_path: Path) -> None:
    port = site.port
    away = _try(site, tmp_path, "/away")  # the crawl's address policy: the page is the redirect, its target dropped
    assert away["status"] == 302 and away["dropped"] == {"http://moved.test:1/new": "port-policy"}
    assert "redirects" not in away
    loop = _try(site, tmp_path, "/loop", "--max-redirects", "2")
    assert loop["status"] == 302 and loop["redirects"] == [f"http://start.test:{port}/loop"] * 2
    assert loop["dropped"] == {f"http://start.test:{port}/loop": "redirect-limit"}
