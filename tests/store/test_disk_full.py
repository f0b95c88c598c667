"""A full disk while writing: the writers cut a failed write back to the last whole record and go on once there
is space again. A real tiny tmpfs is mounted (root only; skipped where mounting is not allowed)."""

from __future__ import annotations

import errno
import json
import os
import random
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.fixtures.disk import fill
from tests.parse.helpers import make_page
from webtrawl.store import JsonlWriter, WarcWriter
from webtrawl.store.batchlog import BatchLog, Begin, Mark, Ready, read_entries


def test_jsonl_writer_leaves_no_half_line_and_resumes(tiny_disk: Path) -> None:
    writer = JsonlWriter(tiny_disk / "records", "n-p0", 1_000_000)
    writer.write({"url": "http://a.example/1"})
    filler = fill(tiny_disk)
    big = {"url": "http://a.example/2", "pad": "x" * 20_000}
    with pytest.raises(OSError) as info:
        writer.write(big)
    assert info.value.errno == errno.ENOSPC
    filler.unlink()
    writer.write(big)
    writer.close()
    lines = [json.loads(line) for p in (tiny_disk / "records").iterdir() for line in p.read_text().splitlines()]
    assert [row["url"] for row in lines] == ["http://a.example/1", "http://a.example/2"]


def test_jsonl_batch_is_all_or_nothing(tiny_disk: Path) -> None:
    """A page's dropped links go out in one write: on a full disk none of them is on disk, so the retry writes
    each exactly once."""
    writer = JsonlWriter(tiny_disk / "dropped", "n-p0", 1_000_000)
    batch = [{"url": f"http://a.example/{i}", "pad": "x" * 2_000} for i in range(20)]
    filler = fill(tiny_disk)
    with pytest.raises(OSError) as info:
        writer.write_some(batch)
    assert info.value.errno == errno.ENOSPC
    filler.unlink()
    assert writer.write_some(batch) == 20
    writer.close()
    lines = [json.loads(line) for p in (tiny_disk / "dropped").iterdir() for line in p.read_text().splitlines()]
    assert [row["url"] for row in lines] == [row["url"] for row in batch]


def test_warc_writer_leaves_no_half_record_and_resumes(tiny_disk: Path) -> None:
    writer = WarcWriter(tiny_disk / "warc", "n-p0", 1 << 30)
    writer.write(make_page(b"<html>first</html>", url="http://a.example/1"), {})
    filler = fill(tiny_disk)
    page = make_page(random.Random(1).randbytes(200_000), url="http://a.example/2")  # incompressible
    with pytest.raises(OSError):
        writer.write(page, {})
    filler.unlink()
    writer.write(page, {})
    writer.close()
    uris = []
    for path in (tiny_disk / "warc").iterdir():
        with path.open("rb") as stream:
            for rec in ArchiveIterator(stream):
                if rec.rec_type == "response":
                    uris.append(rec.rec_headers.get_header("WARC-Target-URI"))
    assert uris == ["http://a.example/1", "http://a.example/2"]


def test_a_batch_log_entry_is_all_or_nothing(tiny_disk: Path) -> None:
    """A Ready entry cut short by a full disk is cut back: the log still says begun (a rollback), never holds a torn
    entry in front of the one the fan-out's retry writes once there is space."""
    log = BatchLog(tiny_disk / "batches" / "n-p0.log")
    log.begin([Mark(str(tiny_disk), "n-p0", ".jsonl", 0, 10)])
    filler = fill(tiny_disk)
    os.truncate(filler, filler.stat().st_size - 8_192)  # room for part of the entry: the write fails midway
    payload = random.Random(1).randbytes(64_000)
    with pytest.raises(OSError) as info:
        log.ready(payload)
    assert info.value.errno == errno.ENOSPC
    assert [type(e) for e in read_entries(log.path)] == [Begin]
    filler.unlink()
    log.ready(payload)
    assert read_entries(log.path)[1:] == [Ready(payload)]
