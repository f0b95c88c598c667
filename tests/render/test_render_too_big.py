"""A page whose HTML is too big to render is kept as fetched, not failed (fetch/render/fetcher.py), with Chromium."""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)

from tests.fetch.servers import run
from tests.parse.helpers import make_page
from tests.render.onepage import render_one
from webtrawl.fetch.render import fetcher
from webtrawl.fetch.response import Response
from webtrawl.parse.record import base_record


def _page(elements: int) -> bytes:
    return b"<html><head><title>t</title></head><body>" + b"<p>x</p>" * elements + b"</body></html>"


def test_a_page_with_too_much_markup_is_kept_as_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page of 1.5M elements took Chromium over a minute (or crashed its renderer): recorded as ``render`` after
    --max-retries renders and fetches of it, with nothing of the page. Its HTML is the page: it is kept as fetched."""
    monkeypatch.setattr(fetcher, "MAX_RENDER_MARKUP", 100, raising=False)  # the real cap's pages take Chromium minutes
    results: list[Response] = []

    async def body() -> None:
        results.append(await render_one(_page(10)))  # under the cap: rendered
        results.append(await render_one(_page(60)))

    run(body())
    small, big = results
    assert small.dom is not None and small.render_blocked == {}
    assert (big.status, big.dom, big.body) == (200, None, _page(60))
    assert big.render_blocked == {"render-too-big": 1}


def test_its_record_says_it_was_not_rendered_and_why() -> None:
    record = base_record(make_page(_page(60), render_blocked={"render-too-big": 1}))
    assert record.rendered is False and record.render_blocked == {"render-too-big": 1}
