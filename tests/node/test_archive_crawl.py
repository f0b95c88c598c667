"""End to end, as a web archivist checks a crawl: what the real ``trawl crawl`` wrote to its WARC files against what
the test web's access log says was sent, read back with warcio (every digest checked)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.node.crawlrun import ROBOTS_PATHS, Crawl, is_robots, node_args
from webtrawl_testweb import TestWeb, WebOptions
from webtrawl_testweb.accesslog import LogEntry

AGENT = "ArchiveBot/1.0 (+https://archive.example/bot)"
OPERATOR = "archivist@archive.example"


@dataclass(frozen=True)
class Record:
    kind: str  # WARC-Type
    uri: str
    status: int  # of a response; 0 for other records
    id: str
    concurrent: str  # WARC-Concurrent-To
    fields: dict[str, str]  # a warcinfo's fields; a request's HTTP headers


@dataclass(frozen=True)
class Archived:
    out: Path
    entries: list[LogEntry]  # the test web's log of the crawl
    files: dict[str, list[Record]]  # WARC file name -> its records, in order


def _read(path: Path) -> list[Record]:
    found = []
    with path.open("rb") as stream:
        for record in ArchiveIterator(stream, check_digests="raise"):
            content = record.content_stream().read()  # the payload digest is checked once it is read
            head = record.rec_headers
            status, fields = 0, {}
            if record.rec_type == "response":
                status = int(record.http_headers.get_statuscode())
            elif record.rec_type == "request":
                fields = dict(record.http_headers.headers)
            elif record.rec_type == "warcinfo":
                fields = dict(line.split(": ", 1) for line in content.decode().splitlines() if line)
            uri = head.get_header("WARC-Target-URI") or ""
            concurrent = head.get_header("WARC-Concurrent-To") or ""
            found.append(Record(record.rec_type, uri, status, head.get_header("WARC-Record-ID"), concurrent, fields))
    return found


@pytest.fixture(scope="module")
def archived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Archived]:
    """A crawl to its end of a web with every host variant twice: robots.txt 200, 404, 503 (retried), a 301 to
    another file. One fetcher (robots.txt answers wait in it for the next page it hands on, and the crawl ends on a
    page), two parsers (two series of WARC files)."""
    with TestWeb(20, 3, options=WebOptions(corpus_fraction=0.0)) as web:
        seeds = web.seeds(3)
        mark = web.mark()
        out = tmp_path_factory.mktemp("archive") / "crawl"
        contact = ["--user-agent", AGENT, "--header", f"From: {OPERATOR}"]  # as Heritrix's operator settings
        crawl = Crawl(out, [*seeds, *node_args(web, "--fetchers", "1", "--parsers", "2", *contact)])
        assert crawl.wait(300) == 0, crawl.log()[-4000:]
        files = {path.name: _read(path) for path in sorted((out / "warc").glob("*.warc.gz"))}
        yield Archived(out, web.entries(since=mark), files)


def test_every_robots_txt_answer_is_archived_as_sent(archived: Archived) -> None:
    sent = Counter((e.url, e.status) for e in archived.entries if e.path in ROBOTS_PATHS)
    assert {status for _, status in sent} >= {200, 301, 404, 503}
    records = [record for records in archived.files.values() for record in records]
    archived_robots = Counter((r.uri, r.status) for r in records if r.kind == "response" and is_robots(r.uri))
    assert archived_robots == sent
    # each robots.txt response has its request, which names it as concurrent
    responses = {r.id: r.uri for r in records if r.kind == "response"}
    requests = Counter(r.uri for r in records if r.kind == "request" and responses.get(r.concurrent) == r.uri)
    robots_uris = Counter(uri for uri, _ in archived_robots.elements())
    assert +Counter({uri: requests[uri] for uri in robots_uris}) == robots_uris


def test_each_warcinfo_says_which_crawl_what_agent_whose_contact_and_what_robots_policy(archived: Archived) -> None:
    assert len({name.rsplit("-", 1)[0] for name in archived.files}) == 2, "two parsers' series"
    infos = []
    for name, records in archived.files.items():
        assert records[0].kind == "warcinfo", name
        infos.append(records[0].fields)
        agents = {r.fields.get("User-Agent") for r in records if r.kind == "request"}
        assert agents == {records[0].fields["http-header-user-agent"]}, name  # what was sent
    assert {info["http-header-user-agent"] for info in infos} == {AGENT}
    assert {(info["http-header-from"], info["operator"]) for info in infos} == {(OPERATOR, OPERATOR)}
    assert {info["robots"] for info in infos} == {"obey"}
    assert all(info["software"].startswith("webtrawl/") and info["hostname"] for info in infos)
    (part_of,) = {info["isPartOf"] for info in infos}  # the crawl's, not a parser's file name prefix
    assert not any(name.startswith(part_of) for name in archived.files), part_of
