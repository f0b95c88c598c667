"""The batch log keeps the file outputs to one record a page when a parser dies inside a batch: a batch begun but not
ready is rolled back (its lines and WARC records cut off, files it opened removed), a ready one is rolled forward
by the next life. A kill is played by an exception out of the frontier: what it leaves is the files and the log."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.fixtures.memory_frontier import MemoryFrontier
from tests.parse.helpers import make_ctx, make_page
from webtrawl.config import DiscoveryOptions
from webtrawl.messages import Completion, Page
from webtrawl.parse.batch import PageBatches
from webtrawl.parse.settle import settle
from webtrawl.store import FanOut
from webtrawl.store.batchlog import BatchLog, read_entries
from webtrawl.store.files import JsonlSink, WarcSink, records_of

PREFIX = "n-p0"


class Killed(BaseException):
    """The process dying at this point."""


def _page(n: int) -> Page:
    page = make_page(f"<title>{n}</title><a href='/l{n}'>x</a>".encode(), url=f"http://site.example/{n}")
    return msgspec.structs.replace(page, lease=msgspec.structs.replace(page.lease, token=f"n/f0.{n}"))


class _Life:
    """One life of a parser: its outputs (reopened, so they seal what the last life left) and its batch log."""

    def __init__(self, out: Path, frontier: MemoryFrontier, chunk: int = 100) -> None:
        self.log_path = out / "batches" / f"{PREFIX}.log"
        settle(self.log_path, frontier, None, None)
        self.records = JsonlSink(out / "records", PREFIX, chunk, records_of)
        self.warc = WarcSink(out / "warc", PREFIX, 1 << 30)
        self.output = FanOut([self.warc, self.records], streams={"warc", "records"})
        self.log = BatchLog(self.log_path)
        self.batches = PageBatches(DiscoveryOptions(), make_ctx(), frontier, self.output, batch_log=self.log)

    def process(self, pages: Sequence[Page]) -> None:
        self.batches.process(list(pages))


def _records(out: Path) -> Counter[str]:
    urls: Counter[str] = Counter()
    for path in (out / "records").glob("*.jsonl*"):
        urls.update(json.loads(line)["url"] for line in path.read_text().splitlines())
    return urls


def _responses(out: Path) -> Counter[str]:
    urls: Counter[str] = Counter()
    for path in (out / "warc").glob("*.warc.gz*"):
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh, check_digests="raise"):
                if record.rec_type == "response":
                    urls[record.rec_headers.get_header("WARC-Target-URI")] += 1
    return urls


def _killed_in_second_batch(
    out: Path, monkeypatch: pytest.MonkeyPatch, at: str, second: range, chunk: int = 100
) -> MemoryFrontier:
    """Pages 0-2 stored and completed, then the pages of ``second`` processed by a parser killed in ``at`` (a
    frontier method); the frontier, which outlives the parser."""
    frontier = MemoryFrontier(1_000, [])
    life = _Life(out, frontier, chunk)
    life.process([_page(n) for n in range(3)])

    def killed(*args: object) -> None:
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(frontier, at, killed)
        with pytest.raises(Killed):
            life.process([_page(n) for n in second])
    return frontier


def _urls(numbers: range) -> Counter[str]:
    return Counter(f"http://site.example/{n}" for n in numbers)


def test_a_batch_killed_before_it_was_ready_is_cut_from_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontier = _killed_in_second_batch(tmp_path, monkeypatch, "add", range(3, 6))  # outputs written, no links
    assert _records(tmp_path) == _urls(range(6))  # what the kill left: the batch's lines are in the files

    second = _Life(tmp_path, frontier)
    assert _records(tmp_path) == _urls(range(3)) and _responses(tmp_path) == _urls(range(3))
    second.process([_page(n) for n in range(3, 6)])  # the URLs were still leased: fetched again
    assert _records(tmp_path) == _urls(range(6)) and _responses(tmp_path) == _urls(range(6))
    assert read_entries(second.log_path) == []


def test_a_batch_killed_once_ready_is_completed_by_the_next_life(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontier = _killed_in_second_batch(tmp_path, monkeypatch, "complete", range(3, 6))  # links added, not done
    assert [c.token for c in frontier.completed] == [f"n/f0.{n}" for n in range(3)]

    second = _Life(tmp_path, frontier)
    assert [c.token for c in frontier.completed] == [f"n/f0.{n}" for n in range(6)]
    assert all(isinstance(c, Completion) and c.counters["stored"] == 1 for c in frontier.completed)
    assert _records(tmp_path) == _urls(range(6)) and _responses(tmp_path) == _urls(range(6))
    assert read_entries(second.log_path) == []


def test_a_file_that_fills_inside_a_batch_is_sealed_only_once_the_batch_is_completed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    frontier = _killed_in_second_batch(tmp_path, monkeypatch, "add", range(3, 8), chunk=4)  # fills files 0 and 1
    files = sorted(p.name for p in (tmp_path / "records").iterdir())
    assert files == [f"{PREFIX}-00000.jsonl.open", f"{PREFIX}-00001.jsonl.open"]  # nothing sealed yet

    second = _Life(tmp_path, frontier, chunk=4)
    assert sorted(p.name for p in (tmp_path / "records").iterdir()) == [f"{PREFIX}-00000.jsonl"]
    assert _records(tmp_path) == _urls(range(3))
    second.process([_page(n) for n in range(3, 8)])
    names = sorted(p.name for p in (tmp_path / "records").iterdir())
    assert names == [f"{PREFIX}-00000.jsonl", f"{PREFIX}-00001.jsonl", f"{PREFIX}-00002.jsonl.open"]
    assert _records(tmp_path) == _urls(range(8))


def test_a_torn_ready_entry_counts_as_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    frontier = _killed_in_second_batch(tmp_path, monkeypatch, "complete", range(3, 6))
    log_path = tmp_path / "batches" / f"{PREFIX}.log"
    log_path.write_bytes(log_path.read_bytes()[:-3])  # the kill came inside the Ready entry's write

    _Life(tmp_path, frontier)  # rolled back, not forward
    assert len(frontier.completed) == 3
    assert _records(tmp_path) == _urls(range(3)) and _responses(tmp_path) == _urls(range(3))
