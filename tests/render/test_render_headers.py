"""The page's own answer as the rendered page sees it (fetch/render/page.py ``_fulfill``), with Chromium."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)

from tests.fetch.servers import run
from tests.render.onepage import HTML_HEAD, render_one
from webtrawl.fetch.response import Response

SHOW_COOKIE = b"<html><body><p id=c></p><script>document.getElementById('c').textContent = document.cookie</script>"


def test_a_utf8_cookie_reaches_the_page_as_a_browser_reads_it() -> None:
    """The answer's header values are kept as their bytes read as Latin-1; handed to Chromium so (Playwright sends
    them as UTF-8), a UTF-8 cookie reached the page's scripts as ``u=cafÃ©``, not ``u=café``."""
    head = HTML_HEAD + "Set-Cookie: u=caf\u00e9; Path=/\r\n".encode()
    results: list[Response] = []

    async def body() -> None:
        results.append(await render_one(SHOW_COOKIE, head))

    run(body())
    (resp,) = results
    assert resp.dom is not None and '<p id="c">u=caf\u00e9</p>' in resp.dom.decode()
