"""--cookies with rendered pages (the real ``trawl crawl``, real Chromium, the crawl's Redis): a rendered page's
scripts see the crawl's cookies in ``document.cookie``, and what they set there is sent on the page's own later
requests and on the next pages, and kept in the crawl's jar.

The site: ``www.rc.test/`` (the seed) sets ``sid`` by Set-Cookie; its script sets ``js_set`` by ``document.cookie``,
then fetches ``/api`` and, once answered, sets ``late`` (after its last request). It links to ``/show``, whose script
puts ``document.cookie`` in its title (no Set-Cookie)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from yarl import URL

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)

from tests.fetch.servers import run
from tests.fixtures.loopback_web import LoopbackWeb
from tests.node.crawlrun import Crawl, records
from tests.node.test_cookies_crawl import _cookie_fields
from webtrawl.fetch.cookies import CrawlJar
from webtrawl.fetch.render.cookies import browser_cookies

SEED = """<html><head><title>seed</title></head><body><a href="/show">show</a><script>
document.cookie = "js_set=1; path=/";
fetch("/api").then(r => r.text()).then(t => {
  document.getElementById("api").textContent = t;
  document.cookie = "late=1; path=/";
});
</script><p id="api"></p></body></html>"""
SHOW = "<html><head><title>none</title></head><body><script>document.title = document.cookie;</script></body></html>"


class RenderCookieWeb(LoopbackWeb):
    def __init__(self) -> None:
        super().__init__("render-cookie-web")
        self.sent: dict[str, list[str]] = {}  # path -> the Cookie header of each request of it
        self.start()

    def url(self, path: str = "/") -> str:
        return f"http://www.rc.test:{self.port}{path}"

    def args(self) -> list[str]:
        return [
            *("--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", str(self.port)),
            *("--fetchers", "1", "--parsers", "1", "--delay", "0.1", "--max-depth", "1"),
            *("--render", "always", "--renderers", "1"),
        ]

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        self.sent.setdefault(request.path, []).append(request.headers.get("Cookie", ""))
        if request.path == "/":
            resp = web.Response(text=SEED, content_type="text/html")
            resp.headers.add("Set-Cookie", "sid=abc; Path=/")
            return resp
        if request.path == "/show":
            return web.Response(text=SHOW, content_type="text/html")
        if request.path == "/api":
            return web.Response(text="api", content_type="text/plain")
        return web.Response(status=404)


@pytest.fixture
def site() -> Iterator[RenderCookieWeb]:
    web_ = RenderCookieWeb()
    yield web_
    web_.close()


def _names(header: str) -> list[str]:
    return sorted(pair.partition("=")[0] for pair in header.split("; ") if pair)


def test_a_rendered_pages_cookies_are_the_crawls(site: RenderCookieWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    crawl = Crawl(out, [site.url(), *site.args(), "--cookies"])
    assert crawl.wait(180) == 0, crawl.log()[-4000:]
    rows = {row["url"]: row for row in records(out)}
    # the script's request after it set js_set carries it and the Set-Cookie one, each once (one Cookie header)
    assert [_names(h) for h in site.sent["/api"]] == [["js_set", "sid"]], site.sent
    # the next page is fetched with all three, and its script sees them (the jar's cookies put in its browser context)
    assert [_names(h) for h in site.sent["/show"]] == [["js_set", "late", "sid"]], site.sent
    assert sorted(rows[site.url("/show")]["title"].split("; ")) == ["js_set=1", "late=1", "sid=abc"], rows
    # the script's cookie is in the crawl's jar in Redis
    (stored,) = _cookie_fields(out).values()
    assert {"js_set", "late"} <= {json.loads(field)[2] for field in stored}, stored  # field: [domain, path, name]


def test_without_cookies_a_render_keeps_none(site: RenderCookieWeb, tmp_path: Path) -> None:
    """Off (the default): no request carries a cookie, a page's script sees none it did not get with its own answer,
    and the crawl's Redis holds none."""
    out = tmp_path / "crawl"
    crawl = Crawl(out, [site.url(), *site.args()])
    assert crawl.wait(180) == 0, crawl.log()[-4000:]
    rows = {row["url"]: row for row in records(out)}
    assert {h for headers in site.sent.values() for h in headers} == {""}, site.sent
    assert site.sent["/api"] == [""] and site.sent["/show"] == [""]
    assert rows[site.url("/show")]["title"] in ("", None), rows
    assert _cookie_fields(out) == {}


def test_the_jars_cookies_of_a_host_as_the_browser_takes_them() -> None:
    """Host-only cookies go to Chromium with the bare host as domain, domain cookies with a leading dot (Chromium's
    tell between the two); a cookie of another host, or of a host-only parent, is not the page's."""

    async def body() -> None:
        jar = CrawlJar()
        sets = ["h=1; Path=/", "d=2; Domain=rc.test; Path=/a; Secure; HttpOnly; SameSite=None; Max-Age=60"]
        jar.update_cookies_from_headers(sets, URL("http://www.rc.test/"))
        jar.update_cookies_from_headers(["x=1", "lax=1; Domain=rc.test; SameSite=lax"], URL("http://api.rc.test/"))
        jar.update_cookies_from_headers(["parent=1"], URL("http://rc.test/"))  # host-only: not sent to www.rc.test
        cookies = {c["name"]: c for c in browser_cookies(jar, "http://www.rc.test/p")}
        assert set(cookies) == {"h", "d", "lax"}
        assert cookies["h"] == {
            "name": "h", "value": "1", "domain": "www.rc.test", "path": "/", "secure": False, "httpOnly": False
        }  # fmt: skip
        expires = cookies["d"].pop("expires")
        assert expires is not None and expires > 0
        assert cookies["d"] == {
            "name": "d", "value": "2", "domain": ".rc.test", "path": "/a", "secure": True, "httpOnly": True,
            "sameSite": "None",
        }  # fmt: skip
        assert (cookies["lax"]["domain"], cookies["lax"].get("sameSite")) == (".rc.test", "Lax")

    run(body())
