"""Subdomains whose robots.txt redirects to www's, as many sites do: www's robots.txt, fetched by www's own lease, is
not asked again for them, so www sees one robots.txt request and its politeness gap between all its requests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web

from tests.fixtures.loopback_web import LoggedWeb
from tests.node.crawlrun import Crawl, records
from webtrawl_testweb import politeness_violations
from webtrawl_testweb.server import host_name

DELAY = 0.5
SUBS = [f"sub{i}.apex.test" for i in range(4)]


class ApexWeb(LoggedWeb):
    """www.apex.test serves the rules and links to each subdomain's /x and /private; a subdomain's robots.txt is a
    301 to www's. Every request is logged under the host name it was asked by."""

    def __init__(self, tmp: Path) -> None:
        super().__init__("apex-web", None, tmp / "access.jsonl")
        self.start()

    def url(self, host: str, path: str = "/") -> str:
        return f"http://{host}:{self.port}{path}"

    def _answer(self, request: web.BaseRequest) -> tuple[int, dict[str, str], bytes]:
        host, path = host_name(request.host), request.path
        if path == "/robots.txt":
            if host == "www.apex.test":
                return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private\n"
            return 301, {"Location": self.url("www.apex.test", "/robots.txt")}, b""
        hrefs = ["/a", "/b", "/c"] + [self.url(sub, p) for sub in SUBS for p in ("/x", "/private")]
        links = "".join(f'<a href="{h}">l</a>' for h in hrefs) if (host, path) == ("www.apex.test", "/") else ""
        return 200, {"Content-Type": "text/html"}, f"<html><body>{links}</body></html>".encode()


@pytest.fixture
def apex_web(tmp_path: Path) -> Iterator[ApexWeb]:
    site = ApexWeb(tmp_path)
    yield site
    site.close()


def test_subdomains_robots_redirect_to_www_asks_www_once(apex_web: ApexWeb, tmp_path: Path) -> None:
    """Before: each fetcher asked www's robots.txt again for the subdomains, outside www's lease: 0.1 s after one of
    www's pages with a 1 s --delay, and www's next page then came less than --delay after that request."""
    out = tmp_path / "crawl"
    args = [
        apex_web.url("www.apex.test"),
        *("--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", str(apex_web.port)),
        *("--fetchers", "2", "--parsers", "1", "--delay", str(DELAY)),
    ]
    crawl = Crawl(out, args)
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    entries = apex_web.log.entries()
    asked = Counter((e.host, e.path) for e in entries)
    assert asked[("www.apex.test", "/robots.txt")] == 1, sorted(asked.items())
    assert all(asked[(sub, "/robots.txt")] == 1 and asked[(sub, "/x")] == 1 for sub in SUBS), sorted(asked.items())
    assert politeness_violations(entries, DELAY) == []
    by_url = {row["url"]: row["error"] for row in records(out)}
    assert {by_url[apex_web.url(sub, "/private")] for sub in SUBS} == {"robots"}  # www's rules, for every subdomain
    assert ("www.apex.test", "/private") not in asked and all(asked[(sub, "/private")] == 0 for sub in SUBS)
