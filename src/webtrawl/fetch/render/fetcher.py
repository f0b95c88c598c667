"""The browser fetcher: the :class:`~webtrawl.fetch.base.Fetcher` that renders pages in Chromium.

It lives inside a fetcher process, beside the HTTP fetcher, and shares that process's HTTP client (connection
pool, resolver, address policy) and robots.txt cache: the browser never talks to the network itself (see
:mod:`webtrawl.fetch.render.chromium`). At most ``--renderers`` pages are rendered at once per process; a lease
that waits longer than its lease allows for a free slot is given back (:class:`~webtrawl.fetch.base.FetcherBusy`).
"""

from __future__ import annotations

import asyncio
import logging

import msgspec
from playwright.async_api import Error as PlaywrightError

from webtrawl.config import FetchOptions, Limits, RenderOptions
from webtrawl.errors import RenderError
from webtrawl.fetch.base import FetcherBusy, FetchRequest
from webtrawl.fetch.client import HttpClient
from webtrawl.fetch.render.chromium import BrowserHost
from webtrawl.fetch.render.page import PageRender
from webtrawl.fetch.render.shell import html_payload
from webtrawl.fetch.response import Response
from webtrawl.fetch.robots import RobotsCache
from webtrawl.formats.encoding import HTML_TYPES
from webtrawl.politeness import RobotsRules

log = logging.getLogger("webtrawl.render")

_MAX_MESSAGE = 200
# A page whose HTML holds more "<" than this (some 200,000 elements) is not rendered. Chromium took over a minute
# for 1.5M elements (the render ran out of time, or its renderer crashed, and was retried as "render"); HTML that
# big is the page itself, not a script's shell, so the answer is kept as fetched (its own links and text).
MAX_RENDER_MARKUP = 400_000
TOO_BIG = "render-too-big"


def renderable(resp: Response) -> bool:
    """Only a whole 2xx HTML page is rendered; a redirect or an error is stored as it came."""
    return 200 <= resp.status < 300 and not resp.truncated and (resp.media_type() or "text/html") in HTML_TYPES


class BrowserFetcher:
    name = "browser"
    role = "render"

    def __init__(
        self,
        opts: RenderOptions,
        fetch: FetchOptions,
        limits: Limits,
        lease_ttl: float,
        client: HttpClient,
        robots: RobotsCache,
    ) -> None:
        self.opts, self.fetch_opts, self.limits = opts, fetch, limits
        self.client = client
        self.robots = robots
        self.browsers = BrowserHost(opts)
        self.blocked_types = frozenset({"image", "media", "font"} - set(opts.render_resources))
        hosts = [h.lower().strip() for h in opts.render_allow_hosts if h.strip()]
        self._hosts = frozenset(h for h in hosts if not h.startswith("*."))
        self._suffixes = tuple(h[1:] for h in hosts if h.startswith("*."))
        self._slots = asyncio.Semaphore(max(1, opts.effective_renderers()))
        self.waiting = 0  # renders waiting for a slot (the worker leases nothing new meanwhile)
        # a lease must not expire while it waits: a slot comes within the lease's time minus one render, or never
        self.slot_wait_s = max(5.0, lease_ttl - opts.render_timeout - 10.0)

    def host_allowed(self, host: str) -> bool:
        """``--render-allow-hosts``: exact names, or ``*.example.com`` for its subdomains."""
        return host in self._hosts or host.endswith(self._suffixes)

    async def fetch(self, request: FetchRequest, rules: RobotsRules) -> Response:
        first = request.prior if request.prior is not None else await self.client.fetch(request.url)
        if not renderable(first):
            return first
        if self._too_big(first):
            log.info("%s: not rendered: its HTML holds more than %d '<'", request.url, MAX_RENDER_MARKUP)
            return msgspec.structs.replace(first, render_blocked={TOO_BIG: 1})
        self.waiting += 1
        try:
            async with asyncio.timeout(self.slot_wait_s):
                await self._slots.acquire()
        except TimeoutError:
            raise FetcherBusy(f"no free renderer within {self.slot_wait_s:.0f}s") from None
        finally:
            self.waiting -= 1
        try:
            return await self._render(request, first, rules)
        finally:
            self._slots.release()

    def _too_big(self, first: Response) -> bool:
        payload = html_payload(first, self.limits.max_decompressed)
        return payload is not None and payload.count(b"<") > MAX_RENDER_MARKUP

    async def _render(self, request: FetchRequest, first: Response, rules: RobotsRules) -> Response:
        try:
            browser = await self.browsers.acquire()
        except PlaywrightError as exc:
            raise RenderError(f"Chromium did not start: {_short(exc)}") from None
        try:
            async with asyncio.timeout(self.opts.render_timeout) as budget:
                deadline = budget.when()
                assert deadline is not None
                return await PageRender(self, request.url, request.reason, first, rules, deadline).run(browser)
        except TimeoutError:
            raise RenderError(f"render took longer than {self.opts.render_timeout:g}s") from None
        except PlaywrightError as exc:  # the browser crashed or was killed, the page broke
            raise RenderError(_short(exc)) from None
        finally:
            await self.browsers.release(browser)

    async def close(self) -> None:
        await self.browsers.close()


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."
