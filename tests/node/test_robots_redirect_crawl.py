"""Subdomains whose robots.txt redirects to www's, as many sites do: www's robots.txt, fetched by www's own lease, is
not asked again for them, so www sees one robots.txt request and its politeness gap between all its requests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import msgspec
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


class SharedWeb(LoggedWeb):
    """r.dom.test's robots.txt is a 301 to a.dom.test's: two host names of one registered domain, on one address."""

    def __init__(self, tmp: Path) -> None:
        super().__init__("shared-web", None, tmp / "access.jsonl")
        self.start()

    def _answer(self, request: web.BaseRequest) -> tuple[int, dict[str, str], bytes]:
        if request.path != "/robots.txt":
            return 200, {"Content-Type": "text/html"}, b"<html><body>leaf</body></html>"
        if host_name(request.host) == "r.dom.test":
            return 301, {"Location": f"http://a.dom.test:{self.port}/robots.txt"}, b""
        return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow: /private\n"


@pytest.fixture
def shared_web(tmp_path: Path) -> Iterator[SharedWeb]:
    site = SharedWeb(tmp_path)
    yield site
    site.close()


@pytest.mark.parametrize("key", ["domain", "ip"])
def test_a_robots_redirect_within_one_politeness_key_waits_its_gap(
    shared_web: SharedWeb, tmp_path: Path, key: str
) -> None:
    """With --politeness-key domain or ip, a robots.txt redirect to another host of the same domain or address is a
    request to the same politeness key. Before: it went 10 ms after the redirect answer, not after --delay as a
    redirect on the same host does."""
    out = tmp_path / "crawl"
    port = shared_web.port
    args = [
        *(f"http://r.dom.test:{port}/{p}" for p in ("x", "private/y")),
        *("--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", str(port)),
        *("--fetchers", "1", "--parsers", "1", "--delay", str(DELAY), "--politeness-key", key),
    ]
    crawl = Crawl(out, args)
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    entries = shared_web.log.entries()
    assert [(e.host, e.path) for e in sorted(entries, key=lambda e: e.start_ms)] == [
        ("r.dom.test", "/robots.txt"),
        ("a.dom.test", "/robots.txt"),
        ("r.dom.test", "/x"),
    ]
    one_key = [msgspec.structs.replace(e, host="dom.test") for e in entries]
    assert politeness_violations(one_key, DELAY) == []
    assert {row["url"]: row["error"] for row in records(out)}[f"http://r.dom.test:{port}/private/y"] == "robots"
