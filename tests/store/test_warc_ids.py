"""WARC record references as warcio reads them back: each record names its file's warcinfo record
(WARC-Warcinfo-ID) across rotations and encryption."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.store.agekit import age_key
from tests.store.test_warc import _page
from webtrawl.formats.agekey import recipients
from webtrawl.formats.recrawl import RecrawlState
from webtrawl.messages import Exchange, Page
from webtrawl.store import WarcWriter


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
