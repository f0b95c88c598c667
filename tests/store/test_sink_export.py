"""``trawl export``: the crawl's JSONL items to other sinks, the last set of a URL fetched twice, nothing doubled."""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.fixtures.broker_fixtures import AMQP_SERVER, NATS_SERVER, queue_messages, stream_messages
from tests.fixtures.mysql_fixtures import mysql_query
from tests.fixtures.usersink import collected
from webtrawl.errors import ConfigError
from webtrawl.store.sinks.export import export, latest

FT = "2026-11-23T18:00:00.000Z"


def _item(url: str, index: int, **fields: object) -> str:
    return json.dumps({"url": url, "fetch_time": FT, "index": index, "fields": fields}) + "\n"


def _crawl(out: Path) -> None:
    items = out / "items"
    items.mkdir(parents=True)
    (items / "n-p0-00000.jsonl").write_text(
        _item("http://a.test/1", 0, name="a", price=1)
        + _item("http://a.test/1", 1, name="b", price=2)
        + _item("http://a.test/2", 0, name="c", price=3)
        + _item("http://a.test/2", 1, name="d", price=4)
    )
    # /2 was fetched again (in flight at a kill) and gave one item; a killed writer's torn line at the end.
    (items / "n-p1-00000.jsonl.open").write_text(
        _item("http://a.test/2", 0, name="c2", price=3.5) + _item("http://a.test/3", 0, name="e", tags=["x"]) + '{"url'
    )


def test_export_keeps_the_last_set_of_each_url(tmp_path: Path, pg_url: str) -> None:
    out = tmp_path / "c1"
    _crawl(out)
    urls = [f"sqlite:///{tmp_path}/e.db", pg_url + "?table=products", f"csv:{tmp_path}/csv", f"parquet:{tmp_path}/pq"]
    assert export(out, "items", urls, "wt-1") == (4, 3)
    expected = [("http://a.test/1", 0), ("http://a.test/1", 1), ("http://a.test/2", 0), ("http://a.test/3", 0)]
    with sqlite3.connect(tmp_path / "e.db") as conn:
        assert conn.execute("SELECT url, idx FROM items ORDER BY url, idx").fetchall() == expected
        assert conn.execute("SELECT name FROM items WHERE url = 'http://a.test/2'").fetchall() == [("c2",)]
    with psycopg.connect(pg_url) as pg:
        assert pg.execute("SELECT url, idx FROM products ORDER BY url, idx").fetchall() == expected
    with next((tmp_path / "csv").glob("export-*.csv")).open(newline="") as fh:
        assert [(r["url"], int(r["idx"])) for r in csv.DictReader(fh)] == expected
    import pyarrow.parquet as pq

    table = pq.read_table(next((tmp_path / "pq").glob("export-*.parquet")))
    assert sorted((r["url"], r["idx"]) for r in table.to_pylist()) == expected
    # Exporting again into the tables changes nothing: one row per item.
    export(out, "items", urls[:2], "wt-1")
    with sqlite3.connect(tmp_path / "e.db") as conn:
        assert conn.execute("SELECT count(*) FROM items").fetchall() == [(4,)]


def test_export_command_errors_are_one_line(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "webtrawl", "export", "--out", str(tmp_path), "--crawl-id", "x"]
    done = subprocess.run([*run, "--to", f"csv:{tmp_path}/o"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.startswith("trawl: error:") and done.stderr.count("\n") == 1
    assert "holds no crawl (no node.lock, crawl.json, items/ or records/ in it)" in done.stderr
    assert not (tmp_path / "o").exists()  # refused before the sink was made
    _crawl(tmp_path)
    done = subprocess.run(
        [*run, "--to", "postgresql://u:pw@127.0.0.1:1/db"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "pw" not in done.stderr and done.stderr.count("\n") == 1
    done = subprocess.run([*run, "--to", f"sqlite:///{tmp_path}/x.db"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "exported 4 items rows of 3 URLs" in done.stdout


def test_export_to_a_user_sink_whose_close_fails_is_one_line(tmp_path: Path) -> None:
    """The sink's exception came out of export's cleanup as a traceback, and the command's exit said nothing
    about which sink failed."""
    _crawl(tmp_path)
    sink = f"tests.fixtures.usersink:CloseFailsRowSink?path={tmp_path}/u.jsonl"
    run = [sys.executable, "-m", "webtrawl", "export", "--out", str(tmp_path), "--crawl-id", "x"]
    done = subprocess.run([*run, "--to", sink, "--to", f"sqlite:///{tmp_path}/x.db"], capture_output=True, text=True)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and errors[0].startswith("trawl: error: sink 'collecting:"), done.stderr
    assert errors[0].endswith(": closing it failed: RuntimeError: connection reset while closing")
    assert len(collected(tmp_path / "u.jsonl")) == 4  # its rows are in, and the other sink's too
    with sqlite3.connect(tmp_path / "x.db") as conn:
        assert conn.execute("SELECT count(*) FROM items").fetchall() == [(4,)]


def test_export_command_names_the_option_the_user_gave_for_a_sink_it_cannot_import(tmp_path: Path) -> None:
    """``trawl export --what records --to nosuchmodule:Sink``: the error names --to, the option typed, not the
    crawl's --items-to or --records-to (which this command does not have)."""
    _crawl(tmp_path)
    run = [sys.executable, "-m", "webtrawl", "export", "--out", str(tmp_path), "--crawl-id", "x"]
    for what in ("items", "records"):
        done = subprocess.run(
            [*run, "--what", what, "--to", "nosuchmodule:Sink"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("trawl: error: --to nosuchmodule:Sink: cannot import nosuchmodule"), done.stderr


def test_export_to_jsonl_writes_flat_keyed_rows_and_a_user_sink_without_write_rows_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "c1"
    _crawl(out)
    assert export(out, "items", [f"jsonl:{tmp_path}/flat"], "wt-1") == (4, 3)
    rows = [json.loads(line) for path in sorted((tmp_path / "flat").glob("*.jsonl")) for line in path.open()]
    assert [(r["crawl"], r["url"], r["idx"], r["name"]) for r in rows][-2:] == [
        ("wt-1", "http://a.test/2", 0, "c2"),
        ("wt-1", "http://a.test/3", 0, "e"),
    ]
    with pytest.raises(ConfigError, match="takes no exported rows"):
        export(out, "items", [f"tests.fixtures.usersink:CollectingSink?path={tmp_path}/u.jsonl"], "wt-1")


def test_export_to_mariadb_nats_rabbitmq_and_json(
    tmp_path: Path, mysql_url: str, nats_subject: str, amqp_queue: str
) -> None:
    out = tmp_path / "c1"
    _crawl(out)
    target = tmp_path / "items.json"
    urls = [mysql_url, f"{NATS_SERVER}/{nats_subject}", f"{AMQP_SERVER}?queue={amqp_queue}", f"json:{target}"]
    assert export(out, "items", urls, "wt-1") == (4, 3)
    assert export(out, "items", urls, "wt-1") == (4, 3)  # again: the table, the stream and the file keep one each
    expected = [("http://a.test/1", 0), ("http://a.test/1", 1), ("http://a.test/2", 0), ("http://a.test/3", 0)]
    ids = [f"wt-1/{url}/{idx}" for url, idx in expected]
    assert sorted(mysql_query(mysql_url, "SELECT url, idx FROM items")) == expected
    assert sorted((r["url"], r["idx"]) for r in json.loads(target.read_text())) == expected
    assert sorted(mid for mid, _ in stream_messages(nats_subject.replace(".", "_"))) == ids
    assert sorted(mid for mid, _, _ in queue_messages(amqp_queue)) == sorted(ids * 2)  # at least once


def test_a_set_cut_by_a_full_chunk_file_is_one_set_and_a_later_fetch_still_wins(tmp_path: Path) -> None:
    """The pieces of a page's items in two chunk files (the second still open: a running crawl) are one set, read
    together; a URL fetched again later keeps only its new set, whole or cut."""
    items = tmp_path / "c1" / "items"
    items.mkdir(parents=True)
    later = FT.replace("18:00", "18:05")
    (items / "n-p0-00000.jsonl").write_text(
        _item("http://a.test/1", 0, n=1) + _item("http://a.test/2", 0, n=2) + _item("http://a.test/2", 1, n=3)
    )
    (items / "n-p0-00001.jsonl.open").write_text(_item("http://a.test/2", 2, n=4))
    (items / "n-p1-00000.jsonl").write_text(_item("http://a.test/1", 0, n=6).replace(FT, later))
    (items / "n-p1-00001.jsonl").write_text(_item("http://a.test/1", 1, n=7).replace(FT, later))
    for k in range(3):  # a set in three files (a page of more items than a file holds)
        (items / f"n-p2-0000{k}.jsonl").write_text(_item("http://a.test/3", k, n=8 + k))
    sets = [[(i["url"], i["index"], i["fields"]["n"]) for i in lines] for lines in latest(tmp_path / "c1", "items")]
    assert sorted(sets) == [
        [("http://a.test/1", 0, 6), ("http://a.test/1", 1, 7)],
        [("http://a.test/2", 0, 2), ("http://a.test/2", 1, 3), ("http://a.test/2", 2, 4)],
        [("http://a.test/3", 0, 8), ("http://a.test/3", 1, 9), ("http://a.test/3", 2, 10)],
    ]


def test_a_file_sealed_while_the_crawl_is_read_is_read_under_its_sealed_name(tmp_path: Path) -> None:
    """A crawl read while it runs (``CrawlResult(out).items()``): its open file was listed, then sealed (renamed,
    with a line more) before the second pass read it, and the read failed with FileNotFoundError."""
    items = tmp_path / "c1" / "items"
    items.mkdir(parents=True)
    (items / "n-p0-00000.jsonl").write_text(_item("http://a.test/1", 0, n=1))
    open_file = items / "n-p0-00001.jsonl.open"
    open_file.write_text(_item("http://a.test/2", 0, n=2) + _item("http://a.test/2", 1, n=3))
    sets = latest(tmp_path / "c1", "items")
    first = next(sets)  # the first pass has read every file, the second the sealed one
    open_file.write_text(open_file.read_text() + _item("http://a.test/3", 0, n=4))  # a URL the first pass missed
    open_file.rename(items / "n-p0-00001.jsonl")
    rest = [[(i["url"], i["fields"]["n"]) for i in lines] for lines in sets]
    assert [(i["url"], i["fields"]["n"]) for i in first] == [("http://a.test/1", 1)]
    assert rest == [[("http://a.test/2", 2), ("http://a.test/2", 3)]]  # /3: in the next read


def _record(url: str, fetch_time: str, items: int | None) -> str:
    record = {"url": url, "final_url": url, "status": 200 if items is not None else 304, "fetch_time": fetch_time}
    return json.dumps(record | ({} if items is None else {"items": items})) + "\n"


def test_a_page_extracted_later_with_no_item_has_none_in_the_export_as_in_the_tables(tmp_path: Path) -> None:
    """A recrawl round in which a listing had no item left writes no item line, only its record (``items: 0``):
    the export (and ``CrawlResult.items()``) gave the items of its earlier fetch, which the live tables had
    deleted. A later revisit (no extraction) keeps the items; a later extraction with items is the last set."""
    out = tmp_path / "c1"
    (out / "items").mkdir(parents=True)
    (out / "records").mkdir()
    later, last = FT.replace("18:00", "18:05"), FT.replace("18:00", "18:09")
    (out / "items" / "n-p0-00000.jsonl").write_text(
        _item("http://a.test/1", 0, n=1) + _item("http://a.test/2", 0, n=2) + _item("http://a.test/3", 0, n=3)
    )
    (out / "items" / "n-p0-00001.jsonl").write_text(_item("http://a.test/3", 0, n=4).replace(FT, last))
    (out / "records" / "n-p0-00000.jsonl").write_text(
        _record("http://a.test/1", FT, 1) + _record("http://a.test/2", FT, 1) + _record("http://a.test/3", FT, 1)
    )
    (out / "records" / "n-p0-00001.jsonl").write_text(
        _record("http://a.test/1", later, 0)  # emptied
        + _record("http://a.test/2", later, None)  # a revisit: not extracted again
        + _record("http://a.test/3", later, 0)
        + _record("http://a.test/3", last, 1)  # emptied, then an item again
    )
    sets = [[(i["url"], i["fields"]["n"]) for i in lines] for lines in latest(out, "items")]
    assert sorted(sets) == [[("http://a.test/2", 2)], [("http://a.test/3", 4)]]
    assert export(out, "items", [f"sqlite:///{tmp_path}/e.db"], "wt-1") == (2, 2)
    from webtrawl import CrawlResult

    assert sorted(i["fields"]["n"] for i in CrawlResult(out).items()) == [2, 4]
