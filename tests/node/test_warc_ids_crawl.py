"""End to end: what lets archive tools follow a crawl's WARC records across files and rounds (record ids named by
the records that refer to them)."""

from __future__ import annotations

from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from tests.node.crawlrun import polite_crawl
from webtrawl_testweb import TestWeb

DELAY = 0.1


def _headers(out: Path) -> list[tuple[str, dict[str, str]]]:
    """(file name, WARC headers) of every record of the crawl's WARC files, read with warcio checking digests."""
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                record.content_stream().read()
                found.append((path.name, dict(record.rec_headers.headers)))
    return found


def test_a_revisit_names_the_response_of_the_earlier_round_it_repeats(testweb: TestWeb, tmp_path: Path) -> None:
    urls = testweb.discovery.fresh_urls()
    out = tmp_path / "crawl"
    polite_crawl(testweb, out, urls["/"], "--recrawl-after", "0.001", delay=DELAY)
    polite_crawl(testweb, out, "--recrawl-after", "0.001", delay=DELAY, resumed=True)  # its next round
    records = _headers(out)
    responses = {head["WARC-Record-ID"]: (name, head) for name, head in records if head["WARC-Type"] == "response"}
    revisits = [(name, head) for name, head in records if head["WARC-Type"] == "revisit"]
    assert sorted(head["WARC-Target-URI"] for _, head in revisits) == sorted(
        [urls["/"], urls["/same.html"], urls["/nodate.html"]]
    )  # two 304s and the same payload (test_discovery_crawl.py)
    for name, revisit in revisits:
        original_file, original = responses[revisit["WARC-Refers-To"]]
        assert original_file != name, "the response is in the first round's file"
        assert original["WARC-Target-URI"] == revisit["WARC-Target-URI"] == revisit["WARC-Refers-To-Target-URI"]
        assert original["WARC-Date"] == revisit["WARC-Refers-To-Date"]  # pywb's way, by URI and date, still holds
        assert original["WARC-Payload-Digest"] == revisit["WARC-Payload-Digest"]
