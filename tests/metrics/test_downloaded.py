"""Bytes downloaded, summed from the records a node's parsers write: whole lines only, each chunk once."""

from __future__ import annotations

import json
from pathlib import Path

from webtrawl.metrics.downloaded import DownloadedBytes


def _line(n: int) -> bytes:
    return json.dumps({"url": f"http://a.test/{n}", "bytes": n, "title": "x"}).encode() + b"\n"


def test_follows_growing_and_renamed_chunks(tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    counter = DownloadedBytes(records)
    assert counter.update() == 0
    chunk = records / "n-p0-000001.jsonl.open"
    chunk.write_bytes(_line(100) + _line(20) + _line(3)[:10])  # the last line is still being written
    assert counter.update() == 120
    with chunk.open("ab") as f:
        f.write(_line(3)[10:] + _line(4000))
    assert counter.update() == 4123
    chunk.rename(records / "n-p0-000001.jsonl")  # rotation: the same inode, not read again
    (records / "n-p1-000001.jsonl.open").write_bytes(_line(7))
    assert counter.update() == 4130
    assert counter.update() == 4130
    # a resume reads the whole directory again from the start: the same total
    assert DownloadedBytes(records).update() == 4130


def test_a_chunk_cut_back_after_a_crash_is_followed_from_its_new_end(tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    chunk = records / "n-p0-000001.jsonl.open"
    chunk.write_bytes(_line(5) + _line(6)[:4])
    counter = DownloadedBytes(records)
    assert counter.update() == 5
    chunk.write_bytes(_line(5))  # sealed: cut back to its last whole record
    assert counter.update() == 5
    with chunk.open("ab") as f:
        f.write(_line(9))
    assert counter.update() == 14
