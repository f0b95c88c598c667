"""The second wall: Chromium launched as the renderer launches it reaches nothing by itself, not even loopback.

A request the routing did not catch (a bug, a new kind of request) must go nowhere: here a page is opened with no
routing at all, towards the JS web on 127.0.0.1 and by name, and the web sees no request."""

from __future__ import annotations

import asyncio
import shutil
import socket

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


_OPEN_SOCKETS = """async ([udpPort, tcpPort]) => {
    new WebSocket(`ws://127.0.0.1:${tcpPort}/`);
    const pc = new RTCPeerConnection({iceServers: [{urls: `stun:127.0.0.1:${udpPort}`}]});
    pc.createDataChannel('x');
    await pc.setLocalDescription(await pc.createOffer());
    // until ICE gathering is over (the STUN request, if any, is sent at its start), at most 10 s
    for (let i = 0; i < 100 && pc.iceGatheringState !== 'complete'; i++) await new Promise(r => setTimeout(r, 100));
    return pc.iceGatheringState;
}"""


def test_a_pages_webrtc_and_websockets_reach_no_address() -> None:
    """Neither is routed through the crawler: WebRTC sent STUN packets over UDP to any address a page named (the
    proxy does not apply to UDP) until only proxied WebRTC was allowed; a WebSocket goes to the dead proxy."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tcp = socket.socket()
    with udp, tcp:
        udp.bind(("127.0.0.1", 0))
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        udp.setblocking(False)
        tcp.setblocking(False)

        async def visit() -> str:
            host = BrowserHost(RenderOptions(render="always"))
            browser = await host.acquire()
            try:
                page = await browser.new_page()
                await page.set_content("<html><body>a page</body></html>")
                ports = [udp.getsockname()[1], tcp.getsockname()[1]]
                return str(await page.evaluate(_OPEN_SOCKETS, ports))
            finally:
                await host.release(browser)
                await host.close()

        assert asyncio.run(visit()) == "complete"
        with pytest.raises(BlockingIOError):
            udp.recvfrom(2048)  # a STUN request from the browser
        with pytest.raises(BlockingIOError):
            tcp.accept()  # a WebSocket connection from the browser
