"""The store's fan-out and its file sinks: every stream written once per batch, in the sinks the config names; a
full disk or an output that is away makes the fan-out wait and retry the same batch without doubling a line."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.fixtures.disk import fill
from tests.parse.helpers import make_page
from webtrawl.config import CrawlConfig
from webtrawl.errors import ConfigError, RedisUnavailable, SinkFailed, SinkUnavailable
from webtrawl.parse.output import page_output, parse_bug_output
from webtrawl.parse.process import Processed
from webtrawl.parse.record import base_record
from webtrawl.store import Drop, PageOutput, SinkContext
from webtrawl.store.fanout import FanOut
from webtrawl.store.files import DroppedSink, JsonlSink, records_of
from webtrawl.store.registry import open_outputs, open_sink, sink_specs


def _lines(directory: Path) -> list[dict[str, object]]:
    return [json.loads(line) for p in sorted(directory.glob("*.jsonl*")) for line in p.read_text().splitlines()]


def _output(i: int, *, items: int = 0, drops: int = 0) -> PageOutput:
    page = make_page(f"<title>{i}</title>".encode(), url=f"http://a.example/{i}")
    record = base_record(page)
    processed = Processed(
        record,
        [],
        {},
        True,
        [(f"http://b.example/{i}/{d}", "scope") for d in range(drops)],
        [{"n": i, "k": k} for k in range(items)],
    )
    return page_output(page, processed)


def test_outputs_of_a_batch_go_to_warc_records_items_and_dropped(tmp_path: Path) -> None:
    cfg = CrawlConfig().with_options(extract="rules.toml")
    assert [s for s, _ in sink_specs(cfg.output, items=True)] == ["warc", "records", "dropped", "items"]
    fanout = open_outputs(cfg.output, True, SinkContext(tmp_path, "n-p0", "c1", chunk=2))
    batch = [_output(i, items=2, drops=1) for i in range(3)]
    fanout.write(batch)
    fanout.write_drops([Drop("http://c.example/", "budget", "http://a.example/0", 1)])
    fanout.close()
    assert [r["url"] for r in _lines(tmp_path / "records")] == [f"http://a.example/{i}" for i in range(3)]
    items = _lines(tmp_path / "items")
    assert [(i["url"], i["index"], i["fields"]) for i in items][:2] == [
        ("http://a.example/0", 0, {"n": 0, "k": 0}),
        ("http://a.example/0", 1, {"n": 0, "k": 1}),
    ]
    assert len(items) == 6 and all(i["fetch_time"] == "2023-11-14T22:13:20.250Z" for i in items)
    dropped = _lines(tmp_path / "dropped")
    assert dropped[0] == {"url": "http://b.example/0/0", "reason": "scope", "parent": "http://a.example/0", "depth": 1}
    assert dropped[-1]["reason"] == "budget" and len(dropped) == 4
    uris = []
    for path in (tmp_path / "warc").iterdir():
        with path.open("rb") as stream:
            uris += [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(stream)]
    assert uris.count("http://a.example/2") == 2  # request and response


def test_parse_bug_record_has_the_one_record_shape(tmp_path: Path) -> None:
    out = parse_bug_output(make_page(b"x"), ValueError("boom"))
    assert out.record.error == "parse-bug" and out.record.error_detail == "ValueError: boom" and not out.warc
    sink = open_sink("jsonl:", "records", SinkContext(tmp_path, "n-p0", "c1"))
    sink.write([out, _output(1)])
    sink.close()
    first, second = _lines(tmp_path / "records")
    assert set(first) == set(second) and first["status"] == 200


def test_unknown_or_mismatched_sinks_are_config_errors(tmp_path: Path) -> None:
    ctx = SinkContext(tmp_path, "n-p0", "c1")
    with pytest.raises(ConfigError, match="unknown kind"):
        open_sink("mongodb://x/y", "items", ctx)
    with pytest.raises(ConfigError, match="warc holds warc, not items"):
        open_sink("warc:", "items", ctx)


class _Flaky:
    """A destination that is away for its first ``outages`` calls (a database restarting)."""

    name = "flaky"

    def __init__(self, outages: int) -> None:
        self.outages = outages
        self.rows: list[str] = []

    def write(self, batch: Sequence[PageOutput]) -> None:
        if self.outages:
            self.outages -= 1
            raise SinkUnavailable("connection refused")
        self.rows += [out.record.url for out in batch]

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_an_output_that_is_away_pauses_and_the_batch_is_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    flaky = _Flaky(outages=2)
    records = JsonlSink(tmp_path / "records", "n-p0", 100, records_of)
    fanout = FanOut([records, flaky], retry_s=0.01)
    fanout.write([_output(0), _output(1)])
    fanout.close()
    assert flaky.rows == ["http://a.example/0", "http://a.example/1"]
    assert len(_lines(tmp_path / "records")) == 2
    assert sum("output flaky unavailable" in r.message for r in caplog.records) == 1
    assert any("output flaky is back" in r.message for r in caplog.records)


class _Raising(_Flaky):
    """A sink that raises ``error`` at every write."""

    def __init__(self, error: Exception) -> None:
        super().__init__(0)
        self.error = error

    def write(self, batch: Sequence[PageOutput]) -> None:
        raise self.error


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            KeyError("price"),
            r"output flaky failed: KeyError: 'price' \(test_fanout\.py:\d+\); the batch .* not completed",
        ),
        (ConfigError("flaky: a row over the limit"), r"flaky: a row over the limit"),
    ],
)
def test_a_sink_that_raises_is_sink_failed_with_one_line_and_the_crawls_redis_away_is_not(
    error: Exception, line: str
) -> None:
    """Not an outage: restarting the parser would fail the same way, so the node stops at once (logs._kind)."""
    with pytest.raises(SinkFailed, match=f"^{line}"):
        FanOut([_Raising(error)], retry_s=0.01).write([_output(0)])
    with pytest.raises(RedisUnavailable):
        FanOut([_Raising(RedisUnavailable("redis away"))], retry_s=0.01).write([_output(0)])


def test_a_retried_batch_spanning_chunk_files_writes_each_line_once(tiny_disk: Path) -> None:
    """The sink remembers how far it got: lines in a chunk file already sealed are not written again."""
    sink = DroppedSink(tiny_disk / "dropped", "n-p0", 3)
    drops = [Drop(f"http://a.example/{i}?{'x' * 4000}", "scope", "http://p.example/", 1) for i in range(40)]
    sink.write_drops(drops[:2])
    filler = fill(tiny_disk)
    os.truncate(filler, filler.stat().st_size - 20_000)  # room for a few lines: the write fails midway
    with pytest.raises(OSError):
        sink.write_drops(drops)
    assert 0 < len(_lines(tiny_disk / "dropped")) - 2 < 38
    filler.unlink()
    sink.write_drops(drops)  # the fan-out's retry: the same batch
    sink.close()
    urls = [row["url"] for row in _lines(tiny_disk / "dropped")]
    assert urls == [d.url for d in drops]  # the first two once (LRU), every other once


def test_the_parsers_own_writes_wait_out_a_full_disk_like_the_outputs(caplog: pytest.LogCaptureFixture) -> None:
    """The batch log's entries go through the fan-out: a full disk pauses the crawl instead of killing the parser."""
    calls: list[int] = []

    def log_entry() -> None:
        calls.append(len(calls))
        if len(calls) < 3:
            raise OSError(errno.ENOSPC, "No space left on device")

    FanOut([], retry_s=0.01).durably("batches/n-p0.log", log_entry)
    assert calls == [0, 1, 2]
    assert sum("disk full: cannot write to batches/n-p0.log" in r.message for r in caplog.records) == 1
    assert any("disk space is back: writing to batches/n-p0.log" in r.message for r in caplog.records)
