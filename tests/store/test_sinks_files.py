"""CSV and Parquet sinks: files standard tools read, rotated and sealed by rename, torn tails cut after a kill."""

from __future__ import annotations

import csv
import json
import os
import uuid
from pathlib import Path
from typing import Any

import msgspec
import pyarrow.parquet as pq
import pytest
import redis

from tests.fixtures.redis_fixtures import delete_prefix
from tests.store.sinkdata import ctx, page, products, store
from webtrawl.parse.columns import RedisColumnTypes
from webtrawl.store.batchlog import Marked, rollback
from webtrawl.store.registry import open_sink, seal_left_open
from webtrawl.store.sinks.csvsink import seal_csv_dir
from webtrawl.store.sinks.parquet import seal_parquet_dir


def _csv_rows(directory: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in sorted(directory.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            rows.extend(csv.DictReader(fh))
    return rows


def test_csv_cells_rotation_and_a_header_that_grows(tmp_path: Path) -> None:
    out = tmp_path / "csv"
    sink = open_sink(f"csv:{out}", "items", ctx(tmp_path, chunk=4))
    store(sink, [products("http://a.test/1", 3)])
    store(sink, [page("http://a.test/2", [{"name": 'Tï "q",\nline', "price": 1, "tags": {"k": [1, None]}}])])
    sink.write([page("http://a.test/3", [{"name": "z", "colour": "red"}])])  # a new field: a new file
    store(sink, [products("http://a.test/4", 2)])
    names = sorted(p.name for p in out.iterdir())
    assert names == ["n-p0-00000.csv", "n-p0-00001.csv.open"]  # 4 rows sealed, then the wider header's file
    sink.close()
    names = sorted(p.name for p in out.iterdir())
    assert names == ["n-p0-00000.csv", "n-p0-00001.csv"]
    with (out / "n-p0-00001.csv").open(newline="") as fh:
        assert next(csv.reader(fh))[-1] == "colour"
    rows = _csv_rows(out)
    assert len(rows) == 7
    assert rows[0]["crawl"] == "wt-1700000000" and rows[0]["idx"] == "0" and rows[0]["in_stock"] == "true"
    assert json.loads(rows[0]["tags"]) == ["a", 0] and rows[0]["price"] == "10.5"
    assert rows[3]["name"] == 'Tï "q",\nline' and json.loads(rows[3]["tags"]) == {"k": [1, None]}
    assert rows[4]["colour"] == "red" and rows[5]["colour"] == ""


def _killed(sink: Any) -> None:
    """What a kill does to a sink's open file: its descriptor closed, nothing sealed or removed."""
    os.close(vars(sink.file.file)["_fd"])


def test_csv_torn_tail_is_cut_and_the_file_sealed_on_next_open(tmp_path: Path) -> None:
    out = tmp_path / "csv"
    sink = open_sink(f"csv:{out}", "records", ctx(tmp_path))
    sink.write([page(f"http://a.test/{i}") for i in range(5)])
    path = out / "n-p0-00000.csv.open"
    with path.open("ab") as fh:  # what a kill inside a write leaves: half a row, inside a quoted field
        fh.write(b'wt-1700000000,http://a.test/9,http://a.test/9,200,"text/ht')
    _killed(sink)  # the process is gone: nothing else happens to the file
    again = open_sink(f"csv:{out}", "records", ctx(tmp_path))
    assert (out / "n-p0-00000.csv").exists() and not path.exists()
    assert [r["url"] for r in _csv_rows(out)] == [f"http://a.test/{i}" for i in range(5)]
    again.write([page("http://a.test/5")])
    again.close()
    assert len(_csv_rows(out)) == 6 and (out / "n-p0-00001.csv").exists()


def test_parquet_files_are_whole_and_typed(tmp_path: Path) -> None:
    out = tmp_path / "pq"
    sink = open_sink(f"parquet:{out}", "items", ctx(tmp_path, chunk=5))
    store(sink, [products("http://a.test/1", 3)])
    store(sink, [products("http://a.test/2", 3), page("http://a.test/3", [{"price": "n/a", "extra_field": 1}])])
    assert sorted(p.name for p in out.iterdir()) == ["n-p0-00000.parquet"]  # 7 rows >= 5: sealed, none open
    store(sink, [products("http://a.test/4", 1)])
    sink.close()
    first = pq.read_table(out / "n-p0-00000.parquet")
    assert first.num_rows == 7
    assert str(first.schema.field("price").type) == "double" and str(first.schema.field("sku").type) == "int64"
    assert str(first.schema.field("in_stock").type) == "bool"
    rows = first.to_pylist()
    assert json.loads(rows[0]["tags"]) == ["a", 0] and rows[0]["url"] == "http://a.test/1"
    assert rows[6]["price"] is None and json.loads(rows[6]["_extra"]) == {"price": "n/a"}
    assert rows[6]["extra_field"] == 1 and rows[0]["extra_field"] is None
    assert pq.read_table(out / "n-p0-00001.parquet").num_rows == 1


def test_parquet_open_file_left_by_a_kill_becomes_a_whole_file(tmp_path: Path) -> None:
    out = tmp_path / "pq"
    sink = open_sink(f"parquet:{out}", "items", ctx(tmp_path))
    sink.write([products("http://a.test/1", 3)])
    sink.write([products("http://a.test/2", 2)])
    path = out / "n-p0-00000.parquet.open"
    data = path.read_bytes()
    with path.open("ab") as fh:
        fh.write(data[: len(data) // 3])  # a torn third write
    _killed(sink)
    assert seal_parquet_dir(out) == 1
    table = pq.read_table(out / "n-p0-00000.parquet")
    assert table.num_rows == 5 and not path.exists()
    assert seal_csv_dir(out) == 0


def test_files_a_parser_no_longer_running_left_open_are_sealed_at_node_start(tmp_path: Path) -> None:
    out = tmp_path / "csv"
    for prefix in ("n-p0", "n-p3", "other-p0"):
        sink = open_sink(f"csv:{out}", "records", ctx(tmp_path, prefix=prefix))
        sink.write([page("http://a.test/1")])
        _killed(sink)
    seal_left_open([f"csv:{out}", f"parquet:{tmp_path}/none"], "n")
    assert sorted(p.name for p in out.iterdir()) == ["n-p0-00000.csv", "n-p3-00000.csv", "other-p0-00000.csv.open"]


@pytest.mark.parametrize("scheme", ["csv", "parquet"])
def test_a_rollback_leaves_the_rows_before_the_batch_log_mark(tmp_path: Path, scheme: str) -> None:
    """A parser killed inside a batch (rows written, URLs not completed): its next life cuts the files back to the
    batch's mark, so the pages fetched again are not in them twice."""
    out = tmp_path / scheme
    sink = open_sink(f"{scheme}:{out}", "items", ctx(tmp_path, chunk=4))
    store(sink, [products("http://a.test/1", 3)])
    assert isinstance(sink, Marked)
    marks = sink.marks()
    sink.write([page("http://a.test/2", [{"name": "x", "colour": "red"}]), products("http://a.test/3", 4)])
    assert [p.name for p in out.iterdir() if not p.name.endswith(".open")] == []  # filled, held until completed
    rollback(marks)  # the next life, before its sinks open
    again = open_sink(f"{scheme}:{out}", "items", ctx(tmp_path, chunk=4))
    store(again, [products("http://a.test/4", 1)])
    again.close()
    urls = [r["url"] for r in _csv_rows(out)] if scheme == "csv" else _parquet_urls(out)
    assert urls == ["http://a.test/1"] * 3 + ["http://a.test/4"]


def _parquet_urls(directory: Path) -> list[str]:
    return [
        url for path in sorted(directory.glob("*.parquet")) for url in pq.read_table(path).column("url").to_pylist()
    ]


def test_parquet_files_of_two_parsers_agree_on_a_fields_type(tmp_path: Path) -> None:
    """A field that is a number on one parser's first page and text on the other's was a double column in one's files
    and a string in the other's: ``pq.read_table(DIR)`` refused the directory (ArrowInvalid). The first to see a
    field types it for both; the other's misfits go to ``_extra``, as in one parser's files."""
    one = open_sink("parquet:pq", "items", ctx(tmp_path, prefix="n-p0", chunk=1))
    two = open_sink("parquet:pq", "items", ctx(tmp_path, prefix="n-p1", chunk=1))
    store(one, [page("http://a.test/1", [{"price": 1.5, "n": 1}])])
    store(two, [page("http://a.test/2", [{"price": "n/a", "n": 2}])])
    store(one, [page("http://a.test/3", [{"price": "cheap", "n": 3}])])
    one.close()
    two.close()
    rows = sorted(pq.read_table(tmp_path / "pq").to_pylist(), key=lambda row: row["n"])
    assert [(row["price"], row["_extra"]) for row in rows] == [
        (1.5, None),
        (None, '{"price":"n/a"}'),
        (None, '{"price":"cheap"}'),
    ]


def test_parquet_files_of_two_nodes_agree_on_a_fields_type_through_the_crawls_redis(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    """Two nodes of a shared crawl each typed a new field by their own first page (their own out directories): a
    field that was a number on one and text on the other made their files unreadable together. A parser's sinks
    agree through the crawl's Redis (parse/columns.py), as the parsers of one node do through its out."""
    prefix = f"t{uuid.uuid4().hex[:12]}"
    shared = RedisColumnTypes(redis_client, prefix)
    try:
        nodes = [tmp_path / "node1", tmp_path / "node2"]
        sinks = [
            open_sink(f"parquet:{out / 'pq'}", "items", msgspec.structs.replace(ctx(out, chunk=1), columns=shared))
            for out in nodes
        ]
        store(sinks[0], [page("http://a.test/1", [{"price": 1.5, "n": 1}])])
        store(sinks[1], [page("http://a.test/2", [{"price": "n/a", "n": 2}])])
        for sink in sinks:
            sink.close()
        table = pq.read_table([str(path) for out in nodes for path in sorted((out / "pq").glob("*.parquet"))])
        rows = sorted(table.to_pylist(), key=lambda row: row["n"])
        assert [(row["price"], row["_extra"]) for row in rows] == [(1.5, None), (None, '{"price":"n/a"}')]
    finally:
        delete_prefix(redis_client, prefix)


def test_csv_cells_longer_than_the_csv_modules_limit_are_kept_when_the_file_is_sealed(tmp_path: Path) -> None:
    out = tmp_path / "csv"
    long = "é" * 200_000  # past the csv module's 128 KiB cell limit
    sink = open_sink(f"csv:{out}", "items", ctx(tmp_path))
    store(sink, [page("http://a.test/1", [{"text": long}, {"text": "short"}]), products("http://a.test/2", 2)])
    sink.close()
    sink = open_sink(f"csv:{out}", "items", ctx(tmp_path, chunk=1))
    store(sink, [page("http://a.test/3", [{"text": long}])])  # a full file, sealed by commit()
    sink.close()
    limit = csv.field_size_limit(1 << 30)  # for the reading here
    try:
        rows = _csv_rows(out)
    finally:
        csv.field_size_limit(limit)
    assert [(r["url"], r["idx"]) for r in rows] == [
        ("http://a.test/1", "0"),
        ("http://a.test/1", "1"),
        ("http://a.test/2", "0"),
        ("http://a.test/2", "1"),
        ("http://a.test/3", "0"),
    ]
    assert rows[0]["text"] == long and rows[4]["text"] == long
