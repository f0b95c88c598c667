"""One render: a fresh browser context, every request it makes answered by the crawler, the DOM when it is quiet.

The page itself is answered from the HTTP response the worker already has (``--render auto`` fetched it to decide;
``always`` fetches it first too, so a redirect or an error is never rendered): the host sees one request for it.
Every other request of the page is checked in this order and refused (``route.abort``) at the first rule it breaks:
scheme (http/https), method (GET only: a crawler does not post forms), resource type (images, media and fonts are
blocked unless ``--render-resources``), ``--render-max-requests`` (and 4 x ``--max-body`` of bodies in all), host
(the page's own, or ``--render-allow-hosts``), the address and port policy (on the name's addresses, as for any
fetch), and robots.txt (the origin's rules; another allowed host's robots.txt is fetched on first use and cached).
Allowed requests go out one at a time (a render is one visit of its host) and are kept, as received, for the WARC.
Each has until the render's deadline minus the time the render needs to finish (and never more than ``--total``): a
request that hangs fails (``timeout``) and the page is taken with what it has, as a browser user would see it,
instead of the whole render timing out.

The render ends when no request has been in flight for ``QUIET_S`` and the page's own count of its running
``fetch``/``XMLHttpRequest`` calls (an init script) is zero (and after ``--render-scrolls`` scrolls to the
bottom, each followed by the same wait), then the DOM is serialized.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import msgspec
from playwright.async_api import Browser, BrowserContext, Page, Request, Route
from playwright.async_api import Error as PlaywrightError

from webtrawl.decompress import content_codings, decompress
from webtrawl.errors import FetchTimeout, PolicyError, RenderMemory, TransportError, WebtrawlError
from webtrawl.fetch.render import cookies as render_cookies
from webtrawl.fetch.response import Response
from webtrawl.messages import Exchange
from webtrawl.politeness import RobotsRules

if TYPE_CHECKING:
    from webtrawl.fetch.render.fetcher import BrowserFetcher

QUIET_S = 0.3  # no request in flight for this long: the page's scripts are done for now
SETTLE_MAX_S = 10.0  # a page that never goes quiet (polling) is taken as it is after this long
GROW_WAIT_MS = 1000  # after a quiet scroll, how long the page may still take to grow
# Counts the page's fetch() and XMLHttpRequest calls still running, from the moment they are made: a request the
# page has started but whose interception has not reached us yet (a busy machine) still keeps the render going.
PENDING_SCRIPT = """(() => {
  let pending = 0;
  const done = () => { pending--; };
  const fetch0 = window.fetch;
  window.fetch = function (...args) {
    pending++;
    const p = fetch0.apply(this, args);
    p.then(done, done);
    return p;
  };
  const send0 = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    pending++;
    this.addEventListener("loadend", done, { once: true });
    return send0.apply(this, args);
  };
  Object.defineProperty(window, "__trawlPending", { get: () => pending });
})();"""
FINISH_MAX_S = 5.0  # what a render keeps for itself after its last request (a quarter of --render-timeout if less)
_MAX_NAVIGATIONS = 5  # the script's navigations of the page kept as its links (a page may loop on them)
_LOADED = "() => document.readyState === 'complete'"
_BYTES_PER_MAX_BODY = 4  # a render keeps at most 4 x --max-body of its requests' bodies
_HOP_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding", "connection", "keep-alive"})


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class PageRender:
    """The state of one render; :meth:`run` returns ``first`` with the DOM, the exchanges and the refusals."""

    def __init__(
        self, owner: BrowserFetcher, url: str, reason: str, first: Response, rules: RobotsRules, deadline: float
    ) -> None:
        self.owner = owner
        self.url = url
        self.reason = reason
        self.first = first
        self.rules = rules
        self.origin = origin_of(url)
        # the event loop's time by which the page's requests are done: the render then still has time to finish
        self.requests_until = deadline - min(FINISH_MAX_S, owner.opts.render_timeout / 4)
        self.host = (urlsplit(url).hostname or "").lower()
        self.exchanges: list[Exchange] = []
        self.blocked: dict[str, int] = {}
        self.requests = 1  # the page itself
        self.navigations: list[str] = []
        self._navigated = False
        self._inflight = 0
        self._changes = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._one = asyncio.Lock()  # one request of this render at a time
        self._handlers: set[asyncio.Task[object]] = set()  # route handlers still running
        self._bytes = 0  # body bytes of the exchanges so far
        self._crashed = False  # the page's renderer died (V8's heap limit, --render-page-memory)
        self._crash_seen = asyncio.Event()
        self._ended = False  # the render is over: a request the page still makes (an unload handler's) is refused
        self._context: BrowserContext | None = None  # with --cookies: its cookies and the jar's kept the same

    async def run(self, browser: Browser) -> Response:
        started = time.perf_counter()
        opts = self.owner.opts
        context = await browser.new_context(
            service_workers="block",  # a service worker's requests would not be routed
            user_agent=self.owner.fetch_opts.user_agent,
            viewport={"width": 1280, "height": 1024},
            accept_downloads=False,
        )
        # --render-timeout (around the whole render) is the limit, not Playwright's own 30 s default per call
        context.set_default_timeout(0)
        shared = self.owner.client.cookies
        mark = shared.jar.generation if shared is not None else 0
        try:
            if shared is not None:
                self._context = context
                await render_cookies.put(context, shared.jar, self.url)
            await context.route("**/*", self._route)
            await context.add_init_script(PENDING_SCRIPT)
            page = await context.new_page()
            page.on("crash", self._crash)
            # the load event seen in the page: Playwright's own wait never ends once a script's navigation was aborted
            await page.goto(self.url, wait_until="commit")
            await self._unless_crashed(page.wait_for_function(_LOADED))
            await self._settle(page)
            for _ in range(opts.render_scrolls):
                if not await self._scroll(page):
                    break
            dom = (await page.content()).encode("utf-8", "replace")
            if shared is not None:  # what the scripts set, stored before the page is handed on
                await render_cookies.take(context, shared.jar, self.url)
                await shared.written(mark)
        except PlaywrightError:
            if self._crashed and opts.render_page_memory:
                raise RenderMemory(
                    f"the page's renderer crashed: its JavaScript heap passed --render-page-memory "
                    f"({opts.render_page_memory} MiB), or it broke otherwise"
                ) from None
            raise
        finally:
            self._ended = True  # before the handlers stop: one that starts later (the context closing) sends nothing
            await self._stop_handlers()
            with contextlib.suppress(Exception):
                await context.close()
        return msgspec.structs.replace(
            self.first,
            render_reason=self.reason,
            dom=dom,
            exchanges=self.exchanges,
            render_blocked=self.blocked,
            navigations=self.navigations,
            elapsed_ms=self.first.elapsed_ms + (time.perf_counter() - started) * 1000.0,
        )

    def _crash(self, page: Page) -> None:
        self._crashed = True
        self._crash_seen.set()

    async def _unless_crashed(self, waiting: Awaitable[object]) -> None:
        """``waiting``, or PlaywrightError as soon as the page's renderer crashes: older Playwright (1.40, the lowest
        the render extra allows) leaves a wait in a crashed page pending, and a --render-page-memory crash then ran
        out the whole render timeout (recorded as ``render``, not ``render-memory``)."""
        wait = asyncio.ensure_future(waiting)
        crash = asyncio.ensure_future(self._crash_seen.wait())
        try:
            await asyncio.wait((wait, crash), return_when=asyncio.FIRST_COMPLETED)
        finally:
            crash.cancel()
            if not wait.done():
                wait.cancel()
        if not wait.done() or wait.cancelled():
            raise PlaywrightError("the page crashed")
        wait.result()

    async def _stop_handlers(self) -> None:
        """End requests still running (the render timed out, or a page never went quiet): each is aborted, so no
        request of this render reaches the host after its release."""
        for task in list(self._handlers):
            task.cancel()
        if self._handlers:
            await asyncio.gather(*self._handlers, return_exceptions=True)

    async def _settle(self, page: Page) -> None:
        """Wait until no request has been in flight for QUIET_S and the page has no fetch or XHR running (at most
        SETTLE_MAX_S)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_MAX_S):
                while True:
                    await self._idle.wait()
                    seen = self._changes
                    await asyncio.sleep(QUIET_S)
                    if self._changes != seen or not self._idle.is_set():
                        continue
                    if await self._page_pending(page) == 0 and self._changes == seen and self._idle.is_set():
                        return

    async def _page_pending(self, page: Page) -> int:
        try:
            return int(await page.evaluate("() => window.__trawlPending || 0"))
        except PlaywrightError:
            return 0

    async def _scroll(self, page: Page) -> bool:
        """One scroll to the bottom; True if the page grew (an infinite-scroll page loaded more)."""
        script = "() => { const h = document.documentElement.scrollHeight; window.scrollTo(0, h); return h; }"
        height = int(await page.evaluate(script))
        await self._settle(page)
        try:
            await page.wait_for_function(
                "h => document.documentElement.scrollHeight > h", arg=height, timeout=GROW_WAIT_MS
            )
        except PlaywrightError:
            return False
        await self._settle(page)
        return True

    # --- requests -------------------------------------------------------------------------------------------
    async def _route(self, route: Route) -> None:
        if self._ended:  # its release may be on its way: nothing more may reach the host for this render
            with contextlib.suppress(PlaywrightError):
                await self._refuse(route, "render-ended", "aborted")
            return
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        self._changes += 1
        self._inflight += 1
        self._idle.clear()
        try:
            await self._answer(route, route.request)
        except PlaywrightError:
            pass  # the page or context closed meanwhile
        finally:
            self._inflight -= 1
            if not self._inflight:
                self._idle.set()
            if task is not None:
                self._handlers.discard(task)

    async def _answer(self, route: Route, request: Request) -> None:
        if request.is_navigation_request() and request.frame.parent_frame is None:
            if self._navigated:  # a script sending the page elsewhere: the render is of this page. Aborted, not
                # blocked: a blocked navigation replaces the page with Chromium's error page, an aborted one is dropped
                if request.method != "GET":  # a posted form: a crawler does not post, nor GET it as a link
                    await self._refuse(route, "render-method", "aborted")
                    return
                if len(self.navigations) < _MAX_NAVIGATIONS:
                    self.navigations.append(request.url)  # a link of the page, as a redirect's Location would be
                await self._refuse(route, "render-navigation", "aborted")
                return
            self._navigated = True
            await self._fulfill(route, self.first)
            return
        url: str | None = request.url
        # Redirects are followed here, each hop checked as a request of its own: Chromium would send the request a
        # fulfilled redirect leads to without routing it (to its dead proxy: the script or data would be lost).
        for _ in range(1 + self.owner.limits.max_redirects):
            assert url is not None
            reason = await self._refusal(url, request)
            if reason:
                await self._refuse(route, reason)
                return
            self.requests += 1
            try:
                async with self._one:
                    # The request is sent with the crawl's jar (--cookies), never the browser's Cookie header (not
                    # passed on: one source, each cookie once); the jar first takes what the scripts set so far.
                    await self._take_cookies()
                    resp = await self.owner.client.fetch(url, timeout=self._time_left())
            except (TransportError, PolicyError) as exc:
                await self._refuse(route, exc.reason, "failed")
                return
            self.exchanges.append(_exchange(url, resp))
            self._bytes += len(resp.body)
            url = resp.redirect_target(url)
            if url is None:
                await self._fulfill(route, resp)
                return
        await self._refuse(route, "redirects", "failed")

    async def _take_cookies(self) -> None:
        """--cookies (``_context`` set): what the page's scripts set so far into the jar, for the next request."""
        if self._context is not None and (shared := self.owner.client.cookies) is not None:
            await render_cookies.take(self._context, shared.jar, self.url)

    def _time_left(self) -> float:
        """The time limit of a request starting now (FetchTimeout if none is left)."""
        left = self.requests_until - asyncio.get_running_loop().time()
        if left <= 0:
            raise FetchTimeout("the render's time for its requests is over")
        return min(self.owner.fetch_opts.timeouts.total, left)

    async def _refusal(self, url: str, request: Request) -> str:
        """Why the page may not have ``url`` (the rules, then the address policy, then robots.txt), or ``""``."""
        reason = self._check(url, request.method, request.resource_type)
        if not reason:
            try:
                await self.owner.client.check_target(url)  # the address policy, before anything is sent
            except (TransportError, PolicyError) as exc:
                reason = exc.reason
        return reason or await self._robots(url)

    def _check(self, url: str, method: str, resource_type: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            return "scheme"
        if method != "GET":
            return "render-method"
        if resource_type in self.owner.blocked_types:
            return "render-type"
        if self.requests >= self.owner.opts.render_max_requests:
            return "render-max-requests"
        if self._bytes >= _BYTES_PER_MAX_BODY * self.owner.limits.max_body:
            return "render-bytes"  # the page message to the parser stays bounded
        host = (parts.hostname or "").lower()
        if host != self.host and not self.owner.host_allowed(host):
            return "render-host"
        return ""

    async def _robots(self, url: str) -> str:
        origin = origin_of(url)
        rules = self.rules
        if origin != self.origin:  # an allowed other host: its rules, fetched once and cached like any origin's
            try:
                rules = await self.owner.robots.cached(origin) or await self.owner.robots.fetch(origin)
            except WebtrawlError as exc:
                return exc.reason
        if rules.unavailable or not rules.allowed(url):
            return "robots"
        return ""

    async def _refuse(self, route: Route, reason: str, error: str = "blockedbyclient") -> None:
        self.blocked[reason] = self.blocked.get(reason, 0) + 1
        await route.abort(error)

    async def _fulfill(self, route: Route, resp: Response) -> None:
        """Hand ``resp`` to the page decoded (the browser gets no Content-Encoding), its headers merged by name."""
        try:
            codings = content_codings(resp.header_values("content-encoding"))
            body = decompress(resp.body, codings, self.owner.limits.max_decompressed)
        except WebtrawlError as exc:
            await self._refuse(route, exc.reason, "failed")
            return
        headers: dict[str, str] = {}
        for name, received in resp.headers:
            low = name.lower()
            if low in _HOP_HEADERS:
                continue
            value = _as_sent(received)
            if low in headers:  # Playwright splits Set-Cookie on newlines; other repeats join with commas
                value = headers[low] + ("\n" if low == "set-cookie" else ", ") + value
            headers[low] = value
        await route.fulfill(status=resp.status, headers=headers, body=body)


def _as_sent(value: str) -> str:
    """A header value (its bytes read as Latin-1, as kept) as Chromium is to get its bytes: Playwright hands header
    strings to it as UTF-8, so a UTF-8 cookie ``café`` reached the page's scripts as ``cafÃ©``. Bytes that are not
    UTF-8 stay read as Latin-1."""
    if value.isascii():
        return value
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def _exchange(url: str, resp: Response) -> Exchange:
    return Exchange(url=url, **resp.wire())
