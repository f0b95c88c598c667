"""The user's rules file and rendering, end to end in real headless Chromium against :class:`JsWeb`:
``--render auto`` renders a page its rules find no item in (and remembers its host), and a rule's ``headers`` go
with every request for the URLs it matches, over HTTP and from the browser.

One crawl (module fixture) of ``shop.js.test`` (products built by a script) and ``plain.js.test`` (items in the
HTML); the tests read its records, items and the JS web's request log.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.node.crawlrun import Crawl, records
from webtrawl_testweb.accesslog import LogEntry
from webtrawl_testweb.jsweb import PRODUCTS, JsWeb

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)

RULES = """
[[rule]]
url = 'shop\\.js\\.test'
items = "css:div.product"
required = ["name"]
headers = { "X-Key" = "shop-key" }
[rule.fields]
name = "css:h2::text"

[[rule]]
url = 'plain\\.js\\.test'
headers = { "X-Key" = "plain-key" }
[rule.fields]
title = "css:h1::text"
"""


@dataclass
class Result:
    web: JsWeb
    rows: dict[str, dict[str, Any]]
    items: list[dict[str, Any]]
    entries: list[LogEntry]
    keys: list[tuple[str, str, str]]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Result]:
    tmp = tmp_path_factory.mktemp("rules")
    rules = tmp / "rules.toml"
    rules.write_text(RULES)
    out = tmp / "crawl"
    with JsWeb(plain_pages=1) as web:
        mark, seen = web.log.mark(), len(web.keys)
        args = [*web.crawl_args("127.0.0.1/32"), "--delay", "0.2", "--fetchers", "1", "--parsers", "1"]
        args += ["--render", "auto", "--extract", str(rules)]
        crawl = Crawl(out, [web.url("shop.js.test"), web.url("plain.js.test"), *args])
        assert crawl.wait(180) == 0, crawl.log()[-4000:]
        rows = records(out)
        assert len(rows) == len({row["url"] for row in rows}), "one record per URL"
        items = []
        for path in sorted((out / "items").glob("*.jsonl*")):
            items += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        yield Result(web, {row["url"]: row for row in rows}, items, web.entries(since=mark), web.keys[seen:])


def test_auto_renders_a_page_its_rules_find_nothing_in_and_not_one_they_do(crawled: Result) -> None:
    web, rows = crawled.web, crawled.rows
    home, more = rows[web.url("shop.js.test")], rows[web.url("shop.js.test", "/more")]
    assert home["rendered"] is True and home["render_reason"] == "no-items", home
    assert more["rendered"] is True and more["render_reason"] == "host", more  # the host was remembered
    # the items exist only after shop.js ran: each page's products once, from its rendered DOM
    shop = sorted((item["url"], item["fields"]["name"]) for item in crawled.items if "shop.js.test" in item["url"])
    assert shop == sorted((page["url"], name) for page in (home, more) for name in PRODUCTS)
    assert home["items"] == more["items"] == len(PRODUCTS)
    # the plain pages' rule found its item over HTTP: not rendered, one item each
    plain = [url for url in rows if "plain.js.test" in url]
    assert len(plain) == 2
    for url in plain:
        assert "rendered" not in rows[url] and rows[url]["items"] == 1, rows[url]
    assert sorted(item["url"] for item in crawled.items if "plain.js.test" in item["url"]) == sorted(plain)
    # one request per page: the render of / reused its HTTP answer; /more was rendered without an HTTP try
    pages = sorted(e.path for e in crawled.entries if e.host == "shop.js.test" and e.path in ("/", "/more"))
    assert pages == ["/", "/more"]


def test_a_rules_headers_go_with_its_urls_requests_over_http_and_from_the_browser(crawled: Result) -> None:
    keys = crawled.keys
    shop = {(path, key) for host, path, key in keys if host == "shop.js.test"}
    # robots.txt and the pages over HTTP, the script and its data fetched for the browser: all carry the key
    assert shop == {(p, "shop-key") for p in ("/robots.txt", "/", "/more", "/static/shop.js", "/api/products")}
    plain = {(path, key) for host, path, key in keys if host == "plain.js.test"}
    assert plain == {(p, "plain-key") for p in ("/robots.txt", "/", "/p/1")}
