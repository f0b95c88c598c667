"""What a crawl makes of links that name one server or one page two ways: ``dot.test.`` (a final dot) and
``user:pass@dot.test``. Each is the same host and URL as its plain spelling: one robots.txt, one politeness gap, one
fetch of each page, and credentials from a page are never sent or written out.

The site: ``dot.test/`` links to its pages in every spelling, one of them through a redirect whose ``Location`` has
a final dot and a password; every request's Host and Authorization headers are kept."""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiohttp import web
from warcio.archiveiterator import ArchiveIterator

from tests.fixtures.loopback_web import LoggedWeb
from tests.node.crawlrun import Crawl, records, warc_responses
from webtrawl_testweb import politeness_violations, robots_first_violations

DELAY = 0.3
SECRET = "s3cret"
PATHS = ("/", "/a", "/b", "/c", "/d", "/e", "/r", "/f")


class DotWeb(LoggedWeb):
    def __init__(self, tmp: Path) -> None:
        super().__init__("dot-web", "dot.test", tmp / "access.jsonl")  # one server, whatever name it is asked by
        self.sent: list[tuple[str, str, str]] = []  # (Host header, path, Authorization header) of every request
        self.start()

    def url(self, path: str = "/", host: str = "dot.test") -> str:
        return f"http://{host}:{self.port}{path}"

    def _answer(self, request: web.BaseRequest) -> tuple[int, dict[str, str], bytes]:
        self.sent.append((request.host, request.path, request.headers.get("Authorization", "")))
        path = request.path
        if path == "/robots.txt":
            return 200, {"Content-Type": "text/plain"}, b"User-agent: *\nDisallow:\n"
        if path == "/r":
            return 301, {"Location": self.url("/f", f"user:{SECRET}@dot.test.")}, b""
        hrefs = {
            "/": [
                self.url("/a", "dot.test."),
                self.url("/a"),
                self.url("/b", "DOT.test."),
                self.url("/b"),
                "/c",
                self.url("/c", "dot.test."),
                self.url("/d", f"user:{SECRET}@dot.test"),
                self.url("/d"),
                self.url("/e", f"user:{SECRET}@dot.test."),
                self.url("/r", "dot.test."),
            ],
            "/a": [self.url("/", "dot.test."), self.url("/", f"{SECRET}@dot.test")],
        }.get(path, [])
        links = "".join(f'<a href="{href}">link</a>' for href in hrefs)
        return 200, {"Content-Type": "text/html"}, f"<html><body>{links}</body></html>".encode()


@pytest.fixture
def dot_web(tmp_path: Path) -> Iterator[DotWeb]:
    site = DotWeb(tmp_path)
    yield site
    site.close()


def _written(out: Path) -> list[str]:
    """Where the crawl wrote the password down: its files but the WARC (records, dropped links, crawl.json...;
    gzip members read) and, in the WARC, a record's target URI or the request it sent. (The pages' bodies and the
    redirect's ``Location`` are archived as the server sent them, password and all.)"""
    found = []
    for path in out.rglob("*"):
        if path.is_file() and "redis" not in path.parts and "warc" not in path.parts:
            data = path.read_bytes()
            if SECRET.encode() in (gzip.decompress(data) if path.name.endswith(".gz") else data):
                found.append(str(path))
    for path in (out / "warc").glob("*.warc.gz*"):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                body = record.content_stream().read()
                if "@" in uri or (record.rec_type == "request" and b"authorization:" in body.lower()):
                    found.append(f"{path.name}: {record.rec_type} {uri}")
    return found


def test_a_final_dot_and_userinfo_name_the_same_host_and_urls(dot_web: DotWeb, tmp_path: Path) -> None:
    """Before: ``dot.test.`` was a second host (its own robots.txt, its own gap beside the plain name's, so two
    requests to the server at once) and a second URL of each page (fetched twice), and ``user:s3cret@`` links were
    fetched again with Basic auth and written to the records and the WARC as they were."""
    out = tmp_path / "crawl"
    args = [
        dot_web.url(),
        *("--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", str(dot_web.port)),
        *("--fetchers", "2", "--parsers", "1", "--delay", str(DELAY), "--session-pages", "1"),
    ]
    crawl = Crawl(out, args)
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    # the server was asked by its plain name only, never with credentials, each page once, robots.txt once
    assert {host for host, _, _ in dot_web.sent} == {f"dot.test:{dot_web.port}"}
    assert {auth for _, _, auth in dot_web.sent} == {""}
    assert Counter(path for _, path, _ in dot_web.sent) == Counter(("/robots.txt", *PATHS))
    entries = dot_web.log.entries()
    assert politeness_violations(entries, DELAY) == []
    assert robots_first_violations(entries) == []
    # one record and one WARC response a page, under its canonical URL
    assert sorted(row["url"] for row in records(out)) == sorted(dot_web.url(p) for p in PATHS)
    assert sorted(uri for uri, _ in warc_responses(out)) == sorted(dot_web.url(p) for p in PATHS)
    assert _written(out) == []
