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


def test_the_last_content_type_decides_what_is_rendered_as_it_decides_what_is_parsed() -> None:
    """A server that sends a default type and then the page's own (``text/plain``, then ``text/html``) means the
    last, as browsers and the parser read it: the first one decided the render, so such an HTML page was not rendered
    by ``--render always`` (and a page ending in ``text/plain`` was), while the parser read the other way."""
    script = b"<html><body><p id=c></p><script>document.getElementById('c').textContent = 'built'</script>"
    plain_then_html = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Type: text/html; charset=utf-8\r\n"
    html_then_plain = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Type: text/plain\r\n"
    results: list[Response] = []

    async def body() -> None:
        results.append(await render_one(script, plain_then_html))
        results.append(await render_one(script, html_then_plain))

    run(body())
    html, plain = results
    assert html.dom is not None and '<p id="c">built</p>' in html.dom.decode(), html
    assert plain.dom is None and plain.render_reason == "", plain
