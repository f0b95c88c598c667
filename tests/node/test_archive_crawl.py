"""End to end, as a web archivist checks a crawl: what the real ``trawl crawl`` wrote to its WARC files against what
the test web's access log says was sent, read back with warcio (every digest checked)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from tests.node.crawlrun import ROBOTS_PATHS, Crawl, is_robots, node_args
from webtrawl_testweb import TestWeb


def _records(out: Path) -> list[tuple[str, str, int, str, str]]:
    """(type, target URI, HTTP status or 0, record id, WARC-Concurrent-To) of every request and response record."""
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                if record.rec_type in ("request", "response"):
                    record.content_stream().read()  # the payload digest is checked once it is read
                    head = record.rec_headers
                    status = int(record.http_headers.get_statuscode()) if record.rec_type == "response" else 0
                    concurrent = head.get_header("WARC-Concurrent-To") or ""
                    found.append(
                        (
                            record.rec_type,
                            head.get_header("WARC-Target-URI"),
                            status,
                            head.get_header("WARC-Record-ID"),
                            concurrent,
                        )
                    )
    return found


def test_every_robots_txt_answer_is_archived_as_sent(make_testweb: Callable[..., TestWeb], tmp_path: Path) -> None:
    web = make_testweb(20, 3)  # every host variant twice: robots.txt 200, 404, 503 (retried), a 301 to another file
    seeds = web.seeds(3)
    mark = web.mark()
    out = tmp_path / "crawl"
    # one fetcher: the robots.txt answers wait in it for the next page it hands on, and the crawl ends on a page
    crawl = Crawl(out, [*seeds, *node_args(web, "--fetchers", "1")])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]

    sent = Counter((e.url, e.status) for e in web.entries(since=mark) if e.path in ROBOTS_PATHS)
    assert {status for _, status in sent} >= {200, 301, 404, 503}
    records = _records(out)
    archived = Counter((uri, status) for kind, uri, status, _, _ in records if kind == "response" and is_robots(uri))
    assert archived == sent
    # each robots.txt response has its request, which names it as concurrent
    responses = {rid: uri for kind, uri, _, rid, _ in records if kind == "response"}
    requests = Counter(
        uri for kind, uri, _, _, concurrent in records if kind == "request" and responses.get(concurrent) == uri
    )
    assert +Counter({uri: requests[uri] for uri, _ in archived}) == Counter(uri for uri, _ in archived.elements())
