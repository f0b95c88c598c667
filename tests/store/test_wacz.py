"""``trawl export --to wacz:``: a crawl's WARCs (a killed crawl's ``.open`` one too) as a WACZ that ``wacz validate``
accepts, each index entry pointing at its record, the crawl's HTML pages listed; bad destinations are one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.store.agekit import age_key
from tests.store.waczcheck import index_entries, package_pages, records_at_entries
from webtrawl.formats.agekey import recipients
from webtrawl.messages import Lease, Page
from webtrawl.store import JsonlWriter, WarcWriter

pytest.importorskip("wacz", reason="the wacz extra packages WACZ")


def _page(url: str, n: int, content_type: str = "text/html") -> Page:
    return Page(
        lease=Lease(token=f"t.{n}", shard=0, host="a.test", url=url),
        status=200,
        reason="OK",
        http_version="1.1",
        headers=[("Content-Type", content_type)],
        body=b"<html><title>page %d</title><a href='/x'>x</a></html>" % n,
        request_headers=[("Host", "a.test")],
        ip="127.0.0.1",
        fetch_time=1_700_000_000.5 + n,
    )


def _record(url: str, content_type: str) -> str:
    row = {"url": url, "final_url": url, "status": 200, "content_type": content_type, "title": url, "error": None}
    return json.dumps(row) + "\n"


def _killed_crawl(out: Path) -> list[str]:
    """A sealed WARC, and one a kill left ``.open`` with half a record at its end; their page records."""
    urls = [f"http://a.test/{n}" for n in range(4)]
    sealed = WarcWriter(out / "warc", "n-p0", 1 << 30)
    for n, url in enumerate(urls[:2]):
        sealed.write_pair(_page(url, n))
    sealed.close()
    killed = WarcWriter(out / "warc", "n-p1", 1 << 30)
    killed.write_pair(_page(urls[2], 2))
    killed.write_pair(_page(urls[3], 3, "text/css"))
    assert killed.current_path is not None
    with killed.current_path.open("ab") as fh:
        fh.write(b"\x1f\x8b\x08\x00half a gzip member")
    (out / "records").mkdir()
    lines = [_record(url, "text/html; charset=utf-8") for url in urls[:3]] + [_record(urls[3], "text/css")]
    (out / "records" / "n-p0-00000.jsonl").write_text("".join(lines[:2]))
    (out / "records" / "n-p1-00000.jsonl.open").write_text("".join(lines[2:]) + '{"url": "http://a.')
    return urls


def _export(out: Path, to: str, *more: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "webtrawl", "export", "--out", str(out), "--to", to, *more]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_a_killed_crawl_packages_whole_records_and_its_html_pages(tmp_path: Path) -> None:
    out = tmp_path / "c1"
    urls = _killed_crawl(out)
    left_open = out / "warc" / "n-p1-00000.warc.gz.open"
    before = left_open.read_bytes()
    package = tmp_path / "c1.wacz"
    done = _export(out, f"wacz:{package}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"packaged 2 WARC file(s) and 3 pages as {package}"
    assert left_open.read_bytes() == before, "the crawl's own files are not changed"
    valid = subprocess.run([sys.executable, "-m", "wacz", "validate", "-f", str(package)], capture_output=True)
    assert valid.returncode == 0 and b"is valid" in valid.stdout, valid.stdout
    found = records_at_entries(package, index_entries(package))
    assert sorted(url for url, kind, _ in found if kind == "response") == urls
    assert package_pages(package) == set(urls[:3])  # HTML pages only: the style sheet is not a page


def test_an_encrypted_crawl_packages_with_its_identity(tmp_path: Path) -> None:
    key = age_key(tmp_path / "age")
    keys = recipients([key.recipient])
    out = tmp_path / "c1"
    urls = [f"http://a.test/{n}" for n in range(3)]
    sealed = WarcWriter(out / "warc", "n-p0", 1 << 30, keys)
    sealed.write_pair(_page(urls[0], 0))
    sealed.close()
    killed = WarcWriter(out / "warc", "n-p1", 1 << 30, keys)  # left open: its parts are what a kill leaves
    for n, url in enumerate(urls[1:], 1):
        killed.write_pair(_page(url, n))
    records = JsonlWriter(out / "records", "n-p0", 100, keys)
    records.write_some([json.loads(_record(url, "text/html")) for url in urls])
    package = tmp_path / "c1.wacz"
    done = _export(out, f"wacz:{package}", "--identity", str(key.identity))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"packaged 2 WARC file(s) and 3 pages as {package}"  # one sealed, one open
    valid = subprocess.run([sys.executable, "-m", "wacz", "validate", "-f", str(package)], capture_output=True)
    assert valid.returncode == 0 and b"is valid" in valid.stdout, valid.stdout
    found = records_at_entries(package, index_entries(package))
    assert sorted(url for url, kind, _ in found if kind == "response") == urls
    assert package_pages(package) == set(urls)


def test_bad_destinations_and_a_crawl_without_warcs_are_one_line(tmp_path: Path) -> None:
    out = tmp_path / "c1"
    (out / "records").mkdir(parents=True)
    for to, said in [
        (f"wacz:{tmp_path}/c1.zip", "a WACZ destination is wacz:FILE.wacz"),
        (f"wacz:{tmp_path}/nowhere/c1.wacz", "does not exist"),
        (f"wacz:{tmp_path}/c1.wacz", "has no WARC files"),
    ]:
        done = _export(out, to)
        assert done.returncode == 2 and done.stderr.startswith("trawl: error:"), done.stderr
        assert said in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert not (tmp_path / "c1.wacz").exists() and list(tmp_path.iterdir()) == [out]


def _fetched_twice(tmp_path: Path, again_row: dict[str, Any]) -> tuple[list[dict[str, Any]], str, str]:
    """A page fetched again (a recrawl round) by another parser: its first capture is in a file whose name sorts
    after the later one's. The pages listed, the page's URL and its first capture's time as a WARC-Date."""
    import zipfile

    from webtrawl.formats.recrawl import warc_date

    out, url = tmp_path / "c1", "http://a.test/0"
    first, again = _page(url, 0), _page(url, 9)  # fetched at ...000.5 and, a round later, ...009.5
    later = WarcWriter(out / "warc", "n-p0", 1 << 30)
    later.write_pair(again)
    later.close()
    earlier = WarcWriter(out / "warc", "n-p1", 1 << 30)
    earlier.write_pair(first)
    earlier.close()
    (out / "records").mkdir()
    rows = [json.loads(_record(url, "text/html")) | {"fetch_time": warc_date(p.fetch_time)} for p in (again, first)]
    (out / "records" / "n-p0-00000.jsonl").write_text(json.dumps(rows[0] | again_row) + "\n")
    (out / "records" / "n-p1-00000.jsonl").write_text(json.dumps(rows[1]) + "\n")
    package = tmp_path / "c1.wacz"
    done = _export(out, f"wacz:{package}")
    assert done.returncode == 0, done.stderr
    with zipfile.ZipFile(package) as zf:
        listed = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()[1:]]
    return listed, url, warc_date(first.fetch_time)[:19] + "Z"


def test_a_page_fetched_twice_is_listed_at_its_first_capture(tmp_path: Path) -> None:
    """py-wacz listed the page at whichever capture it met first in the files."""
    listed, url, first = _fetched_twice(tmp_path, {})
    assert [(page["url"], page["ts"]) for page in listed] == [(url, first)]


def test_a_page_revisited_in_a_later_round_is_listed_at_its_capture_with_its_title(tmp_path: Path) -> None:
    """The later round's record is a revisit (the same bytes: no title, no ts of its own), met first in the files:
    the page was listed at the revisit, untitled, instead of at the capture it refers to."""
    listed, url, first = _fetched_twice(tmp_path, {"title": "", "revisit": "identical-payload-digest"})
    assert [(page["url"], page["ts"], page.get("title")) for page in listed] == [(url, first, url)]


def test_a_page_whose_extraction_failed_is_still_a_page(tmp_path: Path) -> None:
    """A 200 HTML page whose rules or main text failed (``extract-error``: a callback's bug, --extract-timeout on a
    huge page) is archived whole, and was left out of the pages list, so a replay tool did not list it."""
    out, urls = tmp_path / "c1", ["http://a.test/0", "http://a.test/1"]
    warc = WarcWriter(out / "warc", "n-p0", 1 << 30)
    for n, url in enumerate(urls):
        warc.write_pair(_page(url, n))
    warc.close()
    (out / "records").mkdir()
    failed = json.loads(_record(urls[1], "text/html")) | {"error": "extract-error"}
    (out / "records" / "n-p0-00000.jsonl").write_text(_record(urls[0], "text/html") + json.dumps(failed) + "\n")
    package = tmp_path / "c1.wacz"
    done = _export(out, f"wacz:{package}")
    assert done.returncode == 0, done.stderr
    assert package_pages(package) == set(urls)
