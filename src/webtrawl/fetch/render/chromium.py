"""The system's Chromium, launched by Playwright so that it cannot reach the network by itself.

Every request a rendered page makes is intercepted (``context.route``) and answered by the crawler's own HTTP client,
which applies robots.txt and the address policy (see :mod:`webtrawl.fetch.render.page`). The launch flags are the
second wall: all of Chromium's own traffic goes to a proxy at ``127.0.0.1:9`` where nothing listens (loopback
included, ``<-loopback>``; WebRTC may not bypass it over UDP), no name resolves (``--host-resolver-rules``), and
background networking, component updates, DNS prefetch, domain reliability reports and pings are off. Service
workers are blocked per context (their requests would not be routed).

:class:`BrowserHost` owns one browser per fetcher process: launched on the first render, restarted when it died
(crashed or killed: ``disconnected``) and recycled after ``--render-pages-per-browser`` pages or when its processes
use more than ``--render-max-memory``, which bounds what a long-lived browser can leak. One page's JavaScript heap
is capped by V8 itself (``--render-page-memory``, see :func:`launch_args`). The Playwright driver is a
child of the fetcher and closes the browser when the fetcher dies, so a kill -9 of a fetcher leaves no browser
behind; its leases are taken back like any fetcher's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil  # type: ignore[import-untyped]

from webtrawl.config import RenderOptions
from webtrawl.errors import ConfigError
from webtrawl.optional import optional_import

if TYPE_CHECKING:  # Playwright is an optional extra, imported only by a fetcher that renders
    from playwright.async_api import Browser, Playwright

log = logging.getLogger("webtrawl.render")

DEAD_PROXY = "http://127.0.0.1:9"  # discard port: nothing listens, so Chromium's own requests go nowhere
CHROMIUM_ARGS = (
    f"--proxy-server={DEAD_PROXY}",
    "--proxy-bypass-list=<-loopback>",  # loopback too goes to the dead proxy
    "--host-resolver-rules=MAP * ~NOTFOUND",
    # WebRTC is not routed and ignores the proxy for UDP: a page's RTCPeerConnection sent STUN packets to any
    # address it named (127.0.0.1 included). Only proxied WebRTC is allowed, and the proxy is dead.
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-domain-reliability",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-features=NetworkPrediction,OptimizationHints,MediaRouter,Translate,InterestFeedContentSuggestions",
    "--dns-prefetch-disable",
    "--no-pings",
    "--no-first-run",
    "--no-default-browser-check",
    "--metrics-recording-only",
    "--mute-audio",
    "--disable-gpu",
)
# Chromium refuses to start its sandbox as root (a container's usual user); any other user keeps it, since the
# pages rendered are untrusted.
_ROOT_ARGS = ("--no-sandbox",)
_MEMORY_EVERY = 5  # renders between two memory checks (each walks the process tree)
_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium(opts: RenderOptions) -> Path:
    """The browser executable: ``--chromium PATH`` or the first known name on ``PATH``; ConfigError if none."""
    if opts.chromium is not None:
        path = Path(opts.chromium)
        if path.is_file() and path.stat().st_mode & 0o111:
            return path.absolute()  # a bare name would be looked up on PATH by Playwright's driver
        raise ConfigError(f"--chromium {path}: no such executable")
    for name in _NAMES:
        found = shutil.which(name)
        if found:
            return Path(found)
    raise ConfigError("rendering needs Chromium: install the OS package (apt install chromium) or give --chromium PATH")


def check_rendering(opts: RenderOptions) -> None:
    """At start-up, when rendering is on: Playwright importable and a browser found (one clear error otherwise)."""
    if not opts.enabled():
        return
    optional_import("playwright.async_api", needed_by="rendering", extra="render")
    find_chromium(opts)


def launch_args(opts: RenderOptions) -> list[str]:
    """Chromium's flags. ``--render-page-memory`` is V8's old-space limit, which every page's isolate gets: a page
    past it is stopped by V8 even inside a loop that never yields (when a watcher polling the heap over CDP gets
    no answer), its renderer crashes and the render fails with ``render-memory``; other pages go on (each render
    has its own context, so its own renderer process). The heap of a page is only bounded this way: V8 does not
    stop at the limit and wait."""
    args = [*CHROMIUM_ARGS, *(_ROOT_ARGS if os.geteuid() == 0 else ())]
    if opts.render_page_memory:
        args.append(f"--js-flags=--max-old-space-size={opts.render_page_memory}")
    return args


class BrowserHost:
    """One Chromium for this process: ``acquire()`` a live browser for a render, ``release()`` it after."""

    def __init__(self, opts: RenderOptions) -> None:
        self.opts = opts
        self.executable = find_chromium(opts)
        self._pw: Playwright | None = None
        self._pw_cm: Any = None
        self._browser: Browser | None = None
        self._pages = 0  # renders started on the current browser
        self._active: dict[int, int] = {}  # id(browser) -> renders in progress on it
        self._retired: list[Browser] = []
        self._lock = asyncio.Lock()
        self._closing: set[asyncio.Future[None]] = set()
        self.launches = 0
        self._launch_failing = False  # the last launch failed: said once as a WARNING until one succeeds

    async def acquire(self) -> Browser:
        async with self._lock:
            browser = self._browser
            if browser is not None and not self._fit(browser):
                self._retire(browser)
                browser = self._browser = None
            if browser is None:
                browser = self._browser = await self._launch()
                self._pages = 0
            self._pages += 1
            self._active[id(browser)] = self._active.get(id(browser), 0) + 1
            return browser

    def _fit(self, browser: Browser) -> bool:
        """Whether ``browser`` may render one more page: alive, under its page count and its memory budget."""
        if not browser.is_connected():
            return False
        limit = self.opts.render_pages_per_browser
        if limit and self._pages >= limit:
            return False
        cap = self.opts.render_max_memory
        if cap and self._pages % _MEMORY_EVERY == 0:
            used = browser_memory()
            if used > cap:
                log.info("Chromium uses %d MiB (more than --render-max-memory): restarting it", used >> 20)
                return False
        return True

    async def release(self, browser: Browser) -> None:
        left = self._active.get(id(browser), 1) - 1
        self._active[id(browser)] = left
        if left <= 0:
            self._active.pop(id(browser), None)
            if browser in self._retired:
                self._retired.remove(browser)
                await _close(browser)

    def _retire(self, browser: Browser) -> None:
        """A browser that died or served its pages: closed once its last render ends (at once if none runs)."""
        if self._active.get(id(browser), 0) == 0:
            task = asyncio.ensure_future(_close(browser))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
        else:
            self._retired.append(browser)

    async def _launch(self) -> Browser:
        if self._pw is None:
            from playwright.async_api import async_playwright

            self._pw_cm = async_playwright()
            self._pw = await self._pw_cm.start()
        assert self._pw is not None
        self.launches += 1
        if self.launches > 1:
            log.info("starting Chromium again (launch #%d)", self.launches)
        try:
            browser = await self._launch_browser(self._pw)
        except Exception as exc:  # every page it was to render fails with it: say why, once, where a user looks
            if not self._launch_failing:
                log.warning("Chromium (%s) did not start: %s", self.executable, " ".join(str(exc).split())[:300])
            self._launch_failing = True
            raise
        self._launch_failing = False
        return browser

    async def _launch_browser(self, pw: Playwright) -> Browser:
        return await pw.chromium.launch(
            executable_path=str(self.executable),
            args=launch_args(self.opts),
            headless=True,
            chromium_sandbox=False,
            handle_sigint=False,
            handle_sigterm=False,
            handle_sighup=False,
            timeout=max(10_000.0, self.opts.render_timeout * 1000),
        )

    async def close(self) -> None:
        for browser in [*self._retired, *filter(None, [self._browser])]:
            await _close(browser)
        self._retired.clear()
        self._browser = None
        if self._pw_cm is not None:
            with contextlib.suppress(Exception):
                await self._pw_cm.__aexit__(None, None, None)
            self._pw = self._pw_cm = None


def browser_memory() -> int:
    """Resident memory of this process's browsers: every Chromium process below it (the Playwright driver's
    children and theirs). Renderer processes share much of their memory, so this overstates it: a safe bound."""
    total = 0
    for proc in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if "chrom" in proc.name().lower():
                total += proc.memory_info().rss
    return total


async def _close(browser: Browser) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(browser.close(), 10)
