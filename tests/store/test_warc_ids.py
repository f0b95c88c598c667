"""What lets archive tools follow WARC records across files, as warcio reads them back: each record names its file's
warcinfo record (WARC-Warcinfo-ID) across rotations and encryption, a revisit names the response it repeats
(WARC-Refers-To), and file names carry the crawl's stamp."""

from __future__ import annotations

import io
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.store.agekit import age_key
from tests.store.test_warc import _page
from webtrawl.formats.agekey import recipients
from webtrawl.formats.recrawl import RecrawlState, decode
from webtrawl.messages import Exchange, Page
from webtrawl.parse.record import base_record
from webtrawl.parse.recrawl import next_state
from webtrawl.store import PageOutput, SinkContext, WarcWriter
from webtrawl.store.registry import open_sink


def _headers(data: bytes) -> list[dict[str, str]]:
    return [dict(rec.rec_headers.headers) for rec in ArchiveIterator(io.BytesIO(data))]


def _every_kind(n: int) -> Page:
    """Page ``n`` with a robots.txt answer, and by turns a revisit and a rendered page (resource record)."""
    robots = [Exchange(url="http://site.example/robots.txt", status=200, body=b"User-agent: *", fetch_time=1e9 + n)]
    if n % 3 == 1:
        state = RecrawlState("site.example", 0, "http://site.example", "/", 1000, digest="sha1:AAAA", date="x")
        return _page(n, status=304, recrawl=state.encode(), robots=robots)
    if n % 3 == 2:
        script = Exchange(url=f"http://site.example/{n}.js", status=200, body=b"1;", fetch_time=1e9 + n)
        return _page(n, dom=b"<html>after</html>", exchanges=[script], robots=robots)
    return _page(n, robots=robots)


def _check_warcinfo_ids(files: list[bytes]) -> set[str]:
    """Every record of each file names the warcinfo record at its head; the kinds of records seen."""
    kinds = set()
    for data in files:
        info, *records = _headers(data)
        assert info["WARC-Type"] == "warcinfo" and "WARC-Warcinfo-ID" not in info
        assert records
        for rec in records:
            assert rec["WARC-Warcinfo-ID"] == info["WARC-Record-ID"], rec
            kinds.add(rec["WARC-Type"])
    assert len({_headers(data)[0]["WARC-Record-ID"] for data in files}) == len(files)
    return kinds


def _write_all(writer: WarcWriter, pages: int) -> None:
    for n in range(pages):
        page = _every_kind(n)
        writer.write(page, {"revisit": "server-not-modified" if page.recrawl else ""})
    writer.close()


def test_every_record_names_the_warcinfo_of_its_file_across_rotations(tmp_path: Path) -> None:
    _write_all(WarcWriter(tmp_path, "n-p0", 3000), 9)
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert len(files) >= 3, "rotated"
    kinds = _check_warcinfo_ids([f.read_bytes() for f in files])
    assert kinds == {"request", "response", "revisit", "resource"}


def test_encrypted_files_name_their_warcinfo_too(tmp_path: Path) -> None:
    pytest.importorskip("pyrage", reason="the encrypt extra encrypts outputs")
    key = age_key(tmp_path / "key")
    _write_all(WarcWriter(tmp_path / "warc", "n-p0", 3000, recipients([key.recipient])), 9)
    files = sorted((tmp_path / "warc").glob("*.warc.gz.age"))
    assert len(files) >= 3
    kinds = _check_warcinfo_ids([key.decrypt(f) for f in files])
    assert kinds == {"request", "response", "revisit", "resource"}


def _by_type(directory: Path) -> dict[str, list[tuple[str, dict[str, str]]]]:
    """(file name, WARC headers) of every record under ``directory``, by record type."""
    found: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for path in sorted(directory.glob("*.warc.gz")):
        for head in _headers(path.read_bytes()):
            found.setdefault(head["WARC-Type"], []).append((path.name, head))
    return found


def _recrawled(tmp_path: Path, crawl: str, archived: bool = True, rounds: int = 3) -> dict[str, Any]:
    """A page fetched whole, then ``rounds - 1`` times again unchanged (304), each round by a writer of its own
    (a later run, or another node, of crawl ``crawl``) in a file of its own; the records by type."""
    page = _page(1, body=b"<html>same</html>", headers=[("ETag", '"e1"')])
    first = WarcWriter(tmp_path, "n-p0", 1 << 30, crawl=crawl)
    first.write_pair(page)
    first.close()
    state, _ = next_state(page, base_record(page), 60.0, archived=archived)
    for n in range(1, rounds):
        again = _page(1, status=304, body=b"", recrawl=state, fetch_time=page.fetch_time + 3600.5 * n)
        writer = WarcWriter(tmp_path, "n-p0", 1 << 30, crawl=crawl)
        writer.write_pair(again, revisit="server-not-modified")
        writer.close()
        state, _ = next_state(again, base_record(again), 60.0, archived=archived)
    return _by_type(tmp_path)


def test_a_revisit_names_the_response_it_repeats_in_an_earlier_file(tmp_path: Path) -> None:
    records = _recrawled(tmp_path, "wt-1700000000")
    ((first, response),) = records["response"]
    revisits = records["revisit"]
    assert len(revisits) == 2 and all(name != first for name, _ in revisits), "each round in a file of its own"
    for _, revisit in revisits:
        assert revisit["WARC-Refers-To"] == response["WARC-Record-ID"]
        assert revisit["WARC-Refers-To-Date"] == response["WARC-Date"]
        assert revisit["WARC-Refers-To-Target-URI"] == response["WARC-Target-URI"]
    # derived as documented: uuid5 of the crawl's namespace, the date and the URL
    namespace = uuid.uuid5(uuid.NAMESPACE_URL, "webtrawl-crawl:wt-1700000000")
    name = f"{response['WARC-Date']} {response['WARC-Target-URI']}"
    assert response["WARC-Record-ID"] == f"<urn:uuid:{uuid.uuid5(namespace, name)}>"
    other = _recrawled(tmp_path / "other", "wt-1700000001", rounds=1)
    assert other["response"][0][1]["WARC-Record-ID"] != response["WARC-Record-ID"], "another crawl, other ids"


def test_a_state_without_the_derived_id_writes_no_reference(tmp_path: Path) -> None:
    """A page not archived (noindex), or a state written before response ids were derived (its date in ISO form):
    the revisit names its capture by URI and date only, as before."""
    records = _recrawled(tmp_path, "wt-1", archived=False)
    assert all("WARC-Refers-To" not in head for _, head in records["revisit"])
    assert all(head["WARC-Refers-To-Date"] == records["response"][0][1]["WARC-Date"] for _, head in records["revisit"])


def test_the_state_keeps_the_date_of_a_derived_id_in_its_digits() -> None:
    iso = "2026-12-06T23:14:33.123Z"
    state = RecrawlState("h", 1, "http://h", "/", 1000, digest="sha1:X", date=iso, checked=iso, derived=True)
    text = state.encode()
    assert decode(text) == state and "\n20261206231433123\n" in text
    assert len(text) == len(msgspec.structs.replace(state, derived=False).encode()) - 7
    old = decode(msgspec.structs.replace(state, derived=False).encode())  # a state from before: as it was
    assert old is not None and not old.derived and old.date == iso
    odd = msgspec.structs.replace(state, date="2026-12-06 23:14:33").encode()  # not a WARC-Date: kept, not derived
    assert decode(odd) == msgspec.structs.replace(state, date="2026-12-06 23:14:33", derived=False)


def _stored(sink: Any, n: int) -> None:
    page = _page(n)
    sink.write([PageOutput(page=page, record=base_record(page))])
    sink.commit()
    sink.close()


def test_file_names_carry_the_crawl_stamp_and_a_crawl_from_before_goes_on_without(tmp_path: Path) -> None:
    (tmp_path / "warc").mkdir()
    (tmp_path / "warc" / "n-p0-00003.warc.gz").write_bytes(b"")  # a crawl from before the stamp
    stamped = SinkContext(tmp_path, "n-p0", "wt-1", stamp="20261206231433123")
    _stored(open_sink("warc:", "warc", stamped), 1)
    _stored(open_sink("warc:", "warc", msgspec.structs.replace(stamped, stamp="")), 2)
    assert sorted(p.name for p in (tmp_path / "warc").iterdir()) == [
        "n-20261206231433123-p0-00000.warc.gz",  # its own series
        "n-p0-00003.warc.gz",
        "n-p0-00004.warc.gz",  # the unstamped series goes on
    ]
    assert msgspec.structs.replace(stamped, prefix="my-pod-p12").warc_prefix() == "my-pod-20261206231433123-p12"
