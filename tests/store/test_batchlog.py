"""The batch log itself: entries read back whole, a torn one ignored, and what a node's start does with the logs
of parsers that will and will not run again."""

from __future__ import annotations

from pathlib import Path

from webtrawl.store.batchlog import BatchLog, Begin, Mark, Ready, read_entries, rollback_begun, settle


def _open_file(directory: Path, name: str, data: bytes) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.open"
    path.write_bytes(data)
    return path


def test_entries_are_read_back_and_a_torn_one_is_left_out(tmp_path: Path) -> None:
    log = BatchLog(tmp_path / "p.log")
    mark = Mark(str(tmp_path), "n-p0", ".jsonl", 3, 120)
    log.begin([mark])
    log.ready(b"payload")
    assert read_entries(log.path) == [Begin([mark]), Ready(b"payload")]
    log.path.write_bytes(log.path.read_bytes()[:-1])
    assert read_entries(log.path) == [Begin([mark])]
    log.done()
    assert read_entries(log.path) == []


def test_a_rollback_cuts_the_marked_file_and_removes_later_ones_of_its_series_only(tmp_path: Path) -> None:
    out = tmp_path / "records"
    marked = _open_file(out, "n-p0-00003.jsonl", b"a\nb\nc\n")
    later = _open_file(out, "n-p0-00004.jsonl", b"d\n")
    other = _open_file(out, "n-p1-00004.jsonl", b"x\n")  # another parser's
    earlier = _open_file(out, "n-p0-00002.jsonl", b"z\n")  # filled in an earlier batch, its seal pending
    log = BatchLog(tmp_path / "batches" / "n-p0.log")
    log.begin([Mark(str(out), "n-p0", ".jsonl", 3, 4)])
    log.close()
    assert settle(log.path) is None
    assert marked.read_bytes() == b"a\nb\n"
    assert not later.exists()
    assert other.read_bytes() == b"x\n" and earlier.read_bytes() == b"z\n"
    assert read_entries(log.path) == []


def test_a_rollback_with_no_file_open_removes_the_files_the_batch_opened(tmp_path: Path) -> None:
    out = tmp_path / "warc"
    opened = _open_file(out, "n-p0-00007.warc.gz", b"x")
    sealed = out / "n-p0-00006.warc.gz"
    sealed.write_bytes(b"whole")
    log = BatchLog(tmp_path / "n-p0.log")
    log.begin([Mark(str(out), "n-p0", ".warc.gz", 7, -1)])
    assert settle(log.path) is None
    assert not opened.exists() and sealed.read_bytes() == b"whole"


def test_a_node_start_rolls_back_every_begun_batch_and_leaves_ready_ones(tmp_path: Path) -> None:
    out, logs = tmp_path / "records", tmp_path / "batches"
    begun = _open_file(out, "n-p1-00000.jsonl", b"a\nb\n")
    ready = _open_file(out, "n-p0-00000.jsonl", b"c\nd\n")
    for prefix, state in {"n-p0": "ready", "n-p1": "begun"}.items():
        log = BatchLog(logs / f"{prefix}.log")
        log.begin([Mark(str(out), prefix, ".jsonl", 0, 2)])
        if state == "ready":
            log.ready(b"completions")
        log.close()
    rollback_begun(logs)
    assert begun.read_bytes() == b"a\n" and read_entries(logs / "n-p1.log") == []
    assert ready.read_bytes() == b"c\nd\n"  # kept whole: the node completes its pages once its frontier is up
    assert settle(logs / "n-p0.log") == b"completions"
