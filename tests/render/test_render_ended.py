"""A request a page makes once its render is over (an unload handler's, while its context closes) is refused
unsent: the render's release may be on its way, and another visit of the host may start (the host's gap would break).

Playwright's route is the seam here, played by a fake: Chromium gives no way to make a routed request start at that
moment on demand. The walls behind it (no unrouted request leaves Chromium) are tested in test_chromium_walls.py."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")

from webtrawl.config import FetchOptions, Limits, RenderOptions
from webtrawl.fetch.render.page import PageRender
from webtrawl.fetch.response import Response
from webtrawl.politeness import RobotsRules


class _Client:
    def __init__(self) -> None:
        self.sent: list[str] = []

    async def check_target(self, url: str) -> None:
        return None

    async def fetch(self, url: str, **_: Any) -> Response:
        self.sent.append(url)
        return Response(status=200, headers=[("Content-Type", "text/javascript")], body=b"1")


class _Route:
    def __init__(self, url: str) -> None:
        self.request = SimpleNamespace(
            url=url, method="GET", resource_type="fetch", is_navigation_request=lambda: False, frame=None
        )
        self.aborted: list[str] = []
        self.fulfilled = 0

    async def abort(self, error: str = "") -> None:
        self.aborted.append(error)

    async def fulfill(self, **_: Any) -> None:
        self.fulfilled += 1


def _render(client: _Client) -> PageRender:
    owner: Any = SimpleNamespace(
        opts=RenderOptions(render="always"),
        fetch_opts=FetchOptions(),
        limits=Limits(),
        client=client,
        blocked_types=frozenset(),
        host_allowed=lambda host: False,
    )
    rules = RobotsRules(b"", token="webtrawl", expires_at=float("inf"))
    first = Response(status=200, headers=[("Content-Type", "text/html")], body=b"<html></html>")
    return PageRender(owner, "http://a.test/", "always", first, rules, asyncio.get_running_loop().time() + 60)


def test_a_request_made_after_the_render_ended_is_refused_unsent() -> None:
    async def body() -> tuple[_Client, _Route, _Route, PageRender]:
        client = _Client()
        render = _render(client)
        during = _Route("http://a.test/app.js")
        await render._route(during)  # type: ignore[arg-type]
        render._ended = True  # what run() sets when the page is done, before the context closes
        late = _Route("http://a.test/late")
        await render._route(late)  # type: ignore[arg-type]
        return client, during, late, render

    client, during, late, render = asyncio.run(body())
    assert client.sent == ["http://a.test/app.js"] and during.fulfilled == 1  # the fake works as a render's request
    assert late.aborted and not late.fulfilled
    assert render.blocked == {"render-ended": 1}
