"""End to end: what lets archive tools merge a crawl's WARC files with other crawls' and follow its records across
files and rounds: file names unique to the crawl, record ids named by the records that refer to them."""

from __future__ import annotations

import re
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


_NAME = re.compile(r"local-(\d{17})-p0-(\d{5})\.warc\.gz")  # <node>-<crawl stamp>-p<N>-<seq>


def _names(out: Path) -> list[str]:
    return sorted(path.name for path in (out / "warc").iterdir())


def _series(name: str) -> tuple[str, int]:
    """The crawl stamp and sequence number in a WARC file's name."""
    found = _NAME.fullmatch(name)
    assert found, name
    return found[1], int(found[2])


def test_two_crawls_name_their_files_apart_and_a_resume_goes_on_with_its_own(testweb: TestWeb, tmp_path: Path) -> None:
    """Two crawls on one machine, both node ``local``, put in one replay collection: no file name in common. A
    resumed crawl (its next recrawl round) adds files to its own series, numbered on."""
    urls = testweb.discovery.fresh_urls()
    first, second = tmp_path / "first", tmp_path / "second"
    for out in (first, second):
        polite_crawl(testweb, out, urls["/"], "--recrawl-after", "0.001", delay=DELAY)
    names = {out: _names(out) for out in (first, second)}
    assert names[first] and names[second] and not set(names[first]) & set(names[second])
    stamps = {out: {_series(name)[0] for name in names[out]} for out in (first, second)}
    assert len(stamps[first]) == len(stamps[second]) == 1 and stamps[first] != stamps[second]

    polite_crawl(testweb, first, "--recrawl-after", "0.001", delay=DELAY, resumed=True)
    resumed = _names(first)
    assert set(names[first]) < set(resumed), "the first round's files are kept as they were"
    assert {_series(name)[0] for name in resumed} == stamps[first], "the same series"
    assert [_series(name)[1] for name in resumed] == list(range(len(resumed))), "numbered on from its last file"
    revisits = [name for name, head in _headers(first) if head["WARC-Type"] == "revisit"]
    assert revisits and set(revisits) <= set(resumed) - set(names[first]), "the new round in the new file"
