"""--cookies keeps one jar per crawl, in the crawl's Redis: a cookie a site set is sent on every later page it applies
to, whichever fetcher process fetches it and after a kill -9 and a resume, with aiohttp's domain and path rules.

The site: ``www.jar.test/`` (the seed) sets a host-only ``sid`` and a ``site`` cookie for the whole ``jar.test`` domain,
and links to pages of its own and of ``api.jar.test``; every request's Cookie header is kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.fixtures.loopback_web import LoopbackWeb
from tests.node.crawlrun import Crawl, records, stopped_at_end, wait_until
from webtrawl.config import SHARDS
from webtrawl.frontier import connect_sync
from webtrawl.frontier.keys import cookies_key
from webtrawl.node.redis_server import EmbeddedRedis

PAGES = 12  # of each host: taken by either of the two fetchers, one lease at a time (--session-pages 1)
SID = "sid=s3cr3t/a=="


class CookieWeb(LoopbackWeb):
    def __init__(self) -> None:
        super().__init__("cookie-web")
        self.sent: list[tuple[str, str, str]] = []  # (host, path, Cookie header) of every request
        self.start()

    def url(self, host: str = "www", path: str = "/") -> str:
        return f"http://{host}.jar.test:{self.port}{path}"

    def args(self) -> list[str]:
        return [
            *("--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", str(self.port)),
            *("--fetchers", "2", "--parsers", "1", "--delay", "0.2", "--session-pages", "1", "--scope", "domain"),
        ]

    def pages(self) -> dict[tuple[str, str], str]:
        """(host, path) -> the Cookie header it was last fetched with, of the pages after the seed."""
        return {(host, path): cookie for host, path, cookie in self.sent if path.startswith("/p/")}

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        host = request.host.partition(".")[0]
        self.sent.append((host, request.path, request.headers.get("Cookie", "")))
        if request.path == "/robots.txt":
            return web.Response(status=404)
        if request.path == "/" and host == "www":
            links = "".join(
                f'<a href="{self.url(h, f"/p/{i}")}">{h} {i}</a>' for h in ("www", "api") for i in range(PAGES)
            )
            resp = web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")
            resp.headers.add("Set-Cookie", f"{SID}; Path=/; HttpOnly")
            resp.headers.add("Set-Cookie", "site=1; Domain=jar.test; Path=/; Max-Age=3600")
            return resp
        return web.Response(text="<html><body>a page</body></html>", content_type="text/html")


@pytest.fixture
def cookie_web() -> Iterator[CookieWeb]:
    site = CookieWeb()
    yield site
    site.close()


def _cookie_fields(out: Path) -> dict[str, dict[Any, Any]]:
    """The crawl's stored cookies (its Redis, started again on its data): key -> fields."""
    server = EmbeddedRedis(out / "redis").start()
    try:
        client = connect_sync(server.url)
        try:
            return {key.decode(): client.hgetall(key) for key in client.scan_iter(match="*:ck:*")}
        finally:
            client.close()
    finally:
        server.stop()


def _assert_sent_as_the_rules_say(site: CookieWeb) -> None:
    pages = site.pages()
    assert len(pages) == 2 * PAGES
    # www pages get both; api.jar.test only the domain cookie (sid is host-only)
    assert {k: v for k, v in pages.items() if k[0] == "www" and sorted(v.split("; ")) != [SID, "site=1"]} == {}
    assert {k: v for k, v in pages.items() if k[0] == "api" and v != "site=1"} == {}


def test_a_cookie_is_sent_whichever_fetcher_fetches_the_page(cookie_web: CookieWeb, tmp_path: Path) -> None:
    """Two fetchers lease the hosts' pages one at a time: each page carries the cookies the seed set, though the
    fetcher that received them fetched only some of them (a per-process jar sent them on about half)."""
    out = tmp_path / "crawl"
    crawl = Crawl(out, [cookie_web.url(), *cookie_web.args(), "--cookies"])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    _assert_sent_as_the_rules_say(cookie_web)
    stored = _cookie_fields(out)
    # one hash for the registered domain, on its own shard, a field per cookie
    assert list(stored) == [cookies_key("wt", SHARDS, "jar.test")]
    assert len(stored[cookies_key("wt", SHARDS, "jar.test")]) == 2


def test_cookies_survive_a_kill_and_a_resume(cookie_web: CookieWeb, tmp_path: Path) -> None:
    """The node (and its Redis) killed -9 once the seed's page is stored: the resumed crawl's new fetchers send the
    cookies it set on every page they fetch."""
    out = tmp_path / "crawl"
    args = [*cookie_web.args(), "--delay", "1", "--cookies"]  # a slow crawl: most pages are left for the resume
    with stopped_at_end(Crawl(out, [cookie_web.url(), *args])) as crawl:
        wait_until(lambda: any(row["url"] == cookie_web.url() for row in records(out)), 120, "the seed stored", crawl)
        crawl.kill_node()
    before = len(cookie_web.pages())
    assert before < 2 * PAGES
    resume = Crawl(out, args, log_name="resume.log")
    assert resume.wait(300) == 0, resume.log()[-4000:]
    _assert_sent_as_the_rules_say(cookie_web)


def test_cookies_are_off_by_default(cookie_web: CookieWeb, tmp_path: Path) -> None:
    """Without --cookies no page sends one and the crawl's Redis holds none; with it (the same crawl again) it does."""
    off = tmp_path / "off"
    crawl = Crawl(off, [cookie_web.url(), *cookie_web.args()])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    assert set(cookie_web.pages().values()) == {""}
    assert _cookie_fields(off) == {}
    cookie_web.sent.clear()
    on = tmp_path / "on"
    crawl = Crawl(on, [cookie_web.url(), *cookie_web.args(), "--cookies"])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    assert list(_cookie_fields(on)) != []
