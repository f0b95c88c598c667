"""Pages that behave as real sites do, rendered end to end in real headless Chromium (:class:`JsWeb`): a page in a
legacy encoding whose links carry non-ASCII queries, a page that sends itself elsewhere by script, a page whose
script and data requests are redirected (once within the host, once to a refused address), and a slow page.

One crawl (module fixture) with ``--render always``; the tests read its records and the JS web's request log.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from tests.render.jscrawl import Result, render_crawl
from webtrawl_testweb.jsweb import SJIS_QUERIES, JsWeb

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Result]:
    with JsWeb() as web:
        out = tmp_path_factory.mktemp("pages") / "crawl"
        hosts = ["sjis.js.test", "nav.js.test", "redir.js.test", "slow.js.test"]
        yield render_crawl(out, web, hosts, ["--render-allow-hosts", "127.0.0.2", "--render-timeout", "45"], 180)


def test_a_legacy_encoded_pages_link_queries_are_sent_in_its_encoding(crawled: Result) -> None:
    # A browser on that Shift_JIS page requests both links (the HTML's and the script's) with Shift_JIS queries.
    sent = {e.path for e in crawled.entries if e.host == "sjis.js.test"}
    assert set(SJIS_QUERIES) <= sent, sorted(sent)
    home = crawled.rows[crawled.web.url("sjis.js.test")]
    assert home["rendered"] is True and home["title"] == "日本語" and home["encoding"] == "cp932", home


def test_a_page_that_sends_itself_elsewhere_is_recorded_as_it_was_built(crawled: Result) -> None:
    # The render is of the page: its script's navigation is refused, and the page's own DOM (not Chromium's
    # error page for the refused navigation) gives the record's title and links.
    web, rows = crawled.web, crawled.rows
    home = rows[web.url("nav.js.test")]
    assert home["title"] == "Nav home" and home["render_blocked"] == {"render-navigation": 1}, home
    assert rows[web.url("nav.js.test", "/linked")]["status"] == 200
    # where the script sent it is a link of the page, as a redirect or a <meta http-equiv=refresh> would be
    assert rows[web.url("nav.js.test", "/moved")]["title"] == "Nav /moved", sorted(rows)
    assert home["outlinks"] == 2


def test_redirected_requests_of_a_page_are_followed_and_checked(crawled: Result) -> None:
    # The script's redirect within the host is followed (the script runs and builds its link); the data request
    # redirected to the refused address is refused by the address policy, never sent.
    web, rows = crawled.web, crawled.rows
    home = rows[web.url("redir.js.test")]
    assert home["render_blocked"] == {"ip-policy": 1}, home
    assert rows[web.url("redir.js.test", "/built")]["status"] == 200, sorted(rows)
    assert crawled.trap_hits == 0


def test_a_slow_page_gets_the_whole_render_timeout(crawled: Result) -> None:
    # Its script comes after 32 s, past Playwright's own 30 s default: --render-timeout 45 is the limit that holds.
    row = crawled.rows[crawled.web.url("slow.js.test")]
    assert row["title"] == "Slow done" and row["retries"] == 0, row
