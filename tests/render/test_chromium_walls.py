"""The second wall: Chromium launched as the renderer launches it reaches nothing by itself, not even loopback.

A request the routing did not catch (a bug, a new kind of request) must go nowhere: here a page is opened with no
routing at all, towards the JS web on 127.0.0.1 and by name, and the web sees no request."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from webtrawl.config import RenderOptions
from webtrawl.fetch.render.chromium import BrowserHost
from webtrawl_testweb.jsweb import JsWeb

playwright = pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)


def test_unrouted_requests_of_the_browser_go_nowhere() -> None:
    with JsWeb() as web:
        mark = web.log.mark()

        async def visit() -> list[str]:
            host = BrowserHost(RenderOptions(render="always"))
            browser = await host.acquire()
            failures = []
            try:
                page = await browser.new_page()
                for url in (f"http://127.0.0.1:{web.port}/robots.txt", web.url("plain.js.test")):
                    with pytest.raises(playwright.Error) as caught:
                        await page.goto(url, timeout=20_000)
                    failures.append(str(caught.value))
            finally:
                await host.release(browser)
                await host.close()
            return failures

        failures = asyncio.run(visit())
        assert all("ERR_" in failure for failure in failures), failures
        assert web.entries(since=mark) == []
