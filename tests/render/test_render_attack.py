"""A rendered page's own requests to refused addresses: Chromium asks, the crawler refuses with ``ip-policy``.

The page (on the allowed 127.0.0.2) fetches every loopback spelling of the refused address and names resolving to
it, all listed in ``--render-allow-hosts`` so that the host rule lets them through to the address policy. The
refused server must see none of them, and the page's record counts each refusal under ``render_blocked``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.fetch.test_addr_attack import ON_LOOPBACK
from tests.fixtures.attack_web import AttackWeb
from tests.node.crawlrun import Crawl, records
from webtrawl.formats import canonicalize

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)

# The hosts as Chromium writes them after parsing (it reads 127.1, 0x7f.1 and 2130706433 as 127.0.0.1 too).
_BROWSER_HOSTS = ("127.0.0.1", "::ffff:7f00:1", "::1", "0.0.0.0", "evil.example", "alias.example")


def test_a_rendered_pages_requests_to_refused_addresses_are_refused(tmp_path: Path) -> None:
    with AttackWeb() as web:
        urls = [web.url(host, f"/render/{case}") for case, host in ON_LOOPBACK]
        script = (
            f"const urls = {json.dumps(urls)};"
            "Promise.allSettled(urls.map(u => fetch(u))).then(r => {"
            " document.title = 'done ' + r.filter(x => x.status === 'rejected').length; });"
        )
        web.pages["/app"] = f"<html><head><title>start</title></head><body><script>{script}</script></body></html>"
        out = tmp_path / "out"
        args = [web.url("site.example", "/app"), *web.crawl_args(), "--render", "always"]
        args += [arg for host in _BROWSER_HOSTS for arg in ("--render-allow-hosts", host)]
        args += ["--delay", "0", "--fetchers", "1", "--parsers", "1"]
        crawl = Crawl(out, [*args, "--max-depth", "0"])
        assert crawl.wait(180) == 0, crawl.log()
        assert web.private_hits == [], web.private_hits

    row = {r["url"]: r for r in records(out)}[canonicalize(web.url("site.example", "/app"))]
    assert row["rendered"] is True and row["title"] == f"done {len(urls)}", row
    blocked = row["render_blocked"]
    assert blocked == {"ip-policy": len(urls)}, blocked  # each one refused, for that reason
