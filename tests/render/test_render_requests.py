"""What a render does with a page's requests that a browser user would not wait for or would not want sent, end to
end in real headless Chromium (:class:`JsWeb`): a script that never answers, and a form a script posts on load.

One crawl (module fixture) with ``--render always`` and a small ``--render-timeout``.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.render.jscrawl import Result, render_crawl
from webtrawl_testweb.jsweb import JsWeb

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Result]:
    with JsWeb() as web:
        out = tmp_path_factory.mktemp("requests") / "crawl"
        yield render_crawl(out, web, ["hang.js.test", "post.js.test"], ["--render-timeout", "12"], 120)


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
