"""What a render does with a page's requests that a browser user would not wait for or would not want sent, end to
end in real headless Chromium (:class:`JsWeb`): a script that never answers, and a form a script posts on load.

One crawl (module fixture) with ``--render always`` and a small ``--render-timeout``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.node.crawlrun import Crawl, records
from webtrawl_testweb.accesslog import LogEntry
from webtrawl_testweb.jsweb import JsWeb

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)


@dataclass
class Result:
    web: JsWeb
    rows: dict[str, dict[str, Any]]
    entries: list[LogEntry]


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Result]:
    out = tmp_path_factory.mktemp("requests") / "crawl"
    with JsWeb() as web:
        mark = web.log.mark()
        seeds = [web.url("hang.js.test"), web.url("post.js.test")]
        args = [*web.crawl_args("127.0.0.1/32"), "--delay", "0.1", "--fetchers", "1", "--parsers", "1"]
        args += ["--render", "always", "--renderers", "2", "--max-depth", "1", "--render-timeout", "12"]
        crawl = Crawl(out, [*seeds, *args])
        assert crawl.wait(120) == 0, crawl.log()[-4000:]
        rows = records(out)
        assert len(rows) == len({row["url"] for row in rows}), "one record per URL"
        yield Result(web, {row["url"]: row for row in rows}, web.entries(since=mark))


def test_a_page_whose_script_never_answers_is_rendered_with_what_it_has(crawled: Result) -> None:
    # The hung script is given up in time for the render to finish: the page is recorded as built by its other
    # script (title, link), the script counted as failed, and the render is not a timeout retried in vain.
    web, rows = crawled.web, crawled.rows
    home = rows[web.url("hang.js.test")]
    assert home["error"] is None and home["rendered"] is True and home["retries"] == 0, home
    assert home["title"] == "Hang built" and home["render_blocked"] == {"timeout": 1}, home
    assert rows[web.url("hang.js.test", "/built")]["status"] == 200, sorted(rows)


def test_a_form_a_script_posts_is_not_sent_nor_followed(crawled: Result) -> None:
    # A crawler does not post forms: the script's POST navigation is refused, and /posted is not made a GET link.
    web, rows = crawled.web, crawled.rows
    assert not [e for e in crawled.entries if e.host == "post.js.test" and e.path == "/posted"]
    assert web.url("post.js.test", "/posted") not in rows, sorted(rows)
    home = rows[web.url("post.js.test")]
    assert home["title"] == "Post home" and home["render_blocked"] == {"render-method": 1}, home
    assert rows[web.url("post.js.test", "/linked")]["status"] == 200, sorted(rows)
