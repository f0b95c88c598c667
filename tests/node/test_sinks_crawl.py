"""End to end: ``trawl crawl`` of the local test web into JSONL + SQLite + PostgreSQL + CSV + Parquet.

Row counts are compared with the crawl's own JSONL (the source of truth); after a kill -9 of the node and a resume
the SQL sinks hold exactly one row per URL, and a PostgreSQL server stopped mid-crawl pauses the crawl, which goes on
by itself when the server is back, with nothing lost.
"""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pyarrow.parquet as pq
import redis.cluster

from tests.fixtures.postgres_fixtures import ThrowawayPostgres
from tests.fixtures.usersink import collected
from tests.node.clusterrun import NodeRun
from tests.node.crawlrun import Crawl, records, stats, wait_until
from tests.node.test_cluster import _args as _cluster_args
from tests.node.test_cluster import _freeze_holding_leases, _seed
from webtrawl_testweb import TestWeb
from webtrawl_testweb.local_cluster import LocalRedisCluster

# One item per link of a test web page: several per page, from the parser's lexbor tree.
RULES = """
[[rule]]
url = '\\.test'
items = "css:li"
[rule.fields]
link = "css:a::attr(href)"
text = "css:a::text"
"""


def _args(web: TestWeb, *extra: str) -> list[str]:
    return [*web.crawl_args(), "--delay", "0.2", "--fetchers", "2", "--parsers", "2", "--robots-retry", "0.2", *extra]


def _extract(tmp_path: Path) -> list[str]:
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    return ["--extract", str(rules)]


def _sinks(tmp_path: Path, pg_url: str, flag: str, table: str) -> tuple[list[str], dict[str, str]]:
    urls = {
        "sqlite": f"sqlite:///{tmp_path}/rows.db?table={table}",
        "postgresql": f"{pg_url}?table={table}",
        "csv": f"csv:{tmp_path}/csv-{table}",
        "parquet": f"parquet:{tmp_path}/pq-{table}",
    }
    return [arg for url in urls.values() for arg in (flag, url)], urls


Key = tuple[str, int]  # (url, idx) of an item; (url, 0) of a page record


def _sql_keys(urls: dict[str, str], tmp_path: Path, table: str) -> dict[str, Counter[Key]]:
    key = "url, idx" if table == "items" else "url, 0"
    with sqlite3.connect(tmp_path / "rows.db") as conn:
        lite = Counter(conn.execute(f'SELECT {key} FROM "{table}"').fetchall())
    with psycopg.connect(urls["postgresql"].split("?")[0]) as pg:
        rows = Counter(pg.execute(f'SELECT {key} FROM "{table}"').fetchall())  # type: ignore[call-overload]
    return {"sqlite": lite, "postgresql": rows}


def _file_keys(tmp_path: Path, table: str) -> dict[str, Counter[Key]]:
    found: dict[str, Counter[Key]] = {"csv": Counter(), "parquet": Counter()}
    for path in sorted((tmp_path / f"csv-{table}").glob("*")):
        assert path.suffix == ".csv", f"{path.name} not sealed"
        with path.open(newline="") as fh:
            found["csv"].update((row["url"], int(row.get("idx", 0))) for row in csv.DictReader(fh))
    for path in sorted((tmp_path / f"pq-{table}").glob("*")):
        assert path.suffix == ".parquet", f"{path.name} not sealed"
        rows = pq.read_table(path).to_pylist()
        found["parquet"].update((row["url"], row.get("idx", 0)) for row in rows)
    return found


def _jsonl(out: Path, what: str = "records") -> Counter[Key]:
    """The crawl's own JSONL rows (the source of truth), keyed like the sinks."""
    if what == "records":
        return Counter((str(row["url"]), 0) for row in records(out))
    found: Counter[Key] = Counter()
    for path in sorted((out / "items").glob("*.jsonl*")):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            found[(row["url"], row["index"])] += 1
    return found


def test_items_and_records_in_every_sink_match_the_jsonl(testweb: TestWeb, tmp_path: Path, pg_url: str) -> None:
    item_flags, urls = _sinks(tmp_path, pg_url, "--items-to", "items")
    record_flags, _ = _sinks(tmp_path, pg_url, "--records-to", "pages")
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*testweb.seeds(2), *_args(testweb, *_extract(tmp_path), *item_flags, *record_flags)])
    assert crawl.wait(600) == 0, crawl.log()[-4000:]
    for table, what in (("items", "items"), ("pages", "records")):
        truth = _jsonl(out, what)
        assert len(truth) > 300 and max(truth.values()) == 1
        for name, found in {**_sql_keys(urls, tmp_path, table), **_file_keys(tmp_path, table)}.items():
            assert found == truth, (table, name)
    with psycopg.connect(pg_url) as pg:
        crawls = pg.execute("SELECT DISTINCT crawl FROM items").fetchall()
        link = pg.execute("SELECT link, text FROM items WHERE link IS NOT NULL LIMIT 1").fetchone()
        statuses = dict(pg.execute("SELECT status, count(*) FROM pages GROUP BY status").fetchall())
    assert len(crawls) == 1 and crawls[0][0].startswith("wt-")
    assert link is not None and link[0] and link[1] and statuses[200] > 300

    # trawl export of the finished crawl: the same rows, with the crawl id the live sinks used.
    for what, truth in (("items", _jsonl(out, "items")), ("records", _jsonl(out, "records"))):
        target = f"sqlite:///{tmp_path}/export.db?table={what}"
        done = subprocess.run(
            [sys.executable, "-m", "webtrawl", "export", "--out", str(out), "--what", what, "--to", target],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        key = "url, idx" if what == "items" else "url, 0"
        with sqlite3.connect(tmp_path / "export.db") as conn:
            assert Counter(conn.execute(f"SELECT {key} FROM {what}").fetchall()) == truth
            assert conn.execute(f"SELECT DISTINCT crawl FROM {what}").fetchall() == crawls


def test_kill_9_and_resume_leave_one_row_per_url_in_sqlite_and_postgresql(
    testweb: TestWeb, tmp_path: Path, pg_url: str
) -> None:
    item_flags, urls = _sinks(tmp_path, pg_url, "--items-to", "items")
    record_flags, _ = _sinks(tmp_path, pg_url, "--records-to", "pages")
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*testweb.seeds(2), *_args(testweb, *_extract(tmp_path), *item_flags, *record_flags)])
    wait_until(lambda: len(records(out)) >= 150, 300, "150 records", crawl)
    crawl.kill_node()
    resume = Crawl(out, _args(testweb), log_name="resume.log")  # the sinks come from the saved settings
    assert resume.wait(600) == 0, resume.log()[-4000:]
    for table, what in (("items", "items"), ("pages", "records")):
        truth = set(_jsonl(out, what))
        assert len(truth) > 300
        for name, found in _sql_keys(urls, tmp_path, table).items():
            assert set(found) == truth and max(found.values()) == 1, (table, name)
        for name, found in _file_keys(tmp_path, table).items():  # files: whole rows, nothing lost
            assert set(found) == truth, (table, name)


def outage_mid_crawl(crawl: Crawl, out: Path, stop: Callable[[], None], start: Callable[[], None]) -> None:
    """Stop the sink's server mid-crawl, see the crawl pause, start it again, see the crawl go on and end."""
    wait_until(lambda: len(records(out)) >= 100, 300, "100 records", crawl)
    stop()
    wait_until(lambda: "unavailable" in crawl.log(), 120, "the pause", crawl)
    paused_at = len(records(out))
    start()
    wait_until(lambda: "is back, crawl resumes" in crawl.log(), 120, "the resume", crawl)
    assert crawl.wait(600) == 0, crawl.log()[-4000:]
    assert len(records(out)) > paused_at
    assert crawl.log().count("crawl paused") >= 1


def test_postgresql_stopped_mid_crawl_pauses_and_the_crawl_resumes_by_itself(
    testweb: TestWeb, tmp_path: Path, throwaway_pg: ThrowawayPostgres
) -> None:
    out = tmp_path / "crawl"
    sink = ["--items-to", throwaway_pg.url + "?table=items"]
    crawl = Crawl(out, [*testweb.seeds(2), *_args(testweb, *_extract(tmp_path), *sink)])
    outage_mid_crawl(crawl, out, throwaway_pg.stop, throwaway_pg.start)
    truth = _jsonl(out, "items")
    with psycopg.connect(throwaway_pg.url) as pg:
        found: Any = Counter(pg.execute("SELECT url, idx FROM items").fetchall())
    assert found == truth


def test_two_nodes_on_a_redis_cluster_one_killed_write_one_row_per_item_to_one_table(
    testweb: TestWeb,
    redis_cluster: LocalRedisCluster,
    cluster_client: redis.cluster.RedisCluster,
    tmp_path: Path,
    pg_url: str,
) -> None:
    """A central result store: both nodes write the same PostgreSQL table with one crawl id; the URLs the killed
    node held are fetched again by the other, and still every item is there exactly once."""
    url = redis_cluster.url
    _seed(testweb, url, tmp_path)
    sink = (
        *_extract(tmp_path),
        "--items-to",
        pg_url + "?table=items",
        "--lease-ttl",
        "3",
        "--process-ttl",
        "6",
        "--total",
        "2",
        "--robots",
        "2",
    )
    victim = NodeRun(tmp_path / "n1", _cluster_args(testweb, url, "--node-id", "n1", *sink))
    survivor = NodeRun(tmp_path / "n2", _cluster_args(testweb, url, "--node-id", "n2", *sink))
    wait_until(lambda: len(records(victim.out)) >= 60, 120, "n1 to store 60 records")
    assert _freeze_holding_leases(victim, cluster_client, "n1") > 0
    victim.kill()
    assert survivor.wait(300) == 0, survivor.log()[-3000:]
    truth = _jsonl(victim.out, "items") + _jsonl(survivor.out, "items")
    with psycopg.connect(pg_url) as pg:
        found = Counter(pg.execute("SELECT url, idx FROM items").fetchall())
        crawls = pg.execute("SELECT DISTINCT crawl FROM items").fetchall()
    assert set(found) == set(truth) and max(found.values()) == 1 and len(found) > 300
    assert len(crawls) == 1

    # A node's out exported later without --redis: its saved settings name the cluster, whose crawl id the rows keep.
    target = f"sqlite:///{tmp_path}/n2.db?table=items"
    done = subprocess.run(
        [sys.executable, "-m", "webtrawl", "export", "--out", str(survivor.out), "--to", target],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "n2.db") as conn:
        assert conn.execute("SELECT DISTINCT crawl FROM items").fetchall() == crawls


USER_SINK = "tests.fixtures.usersink:CollectingSink"


def _collected_keys(path: Path) -> Counter[Key]:
    return Counter((row["url"], row.get("index", 0)) for row in collected(path))


def test_a_user_sink_named_by_import_path_receives_every_item_once(testweb: TestWeb, tmp_path: Path) -> None:
    items, pages = tmp_path / "items.jsonl", tmp_path / "pages.jsonl"
    sinks = ["--items-to", f"{USER_SINK}?path={items}", "--records-to", f"{USER_SINK}?path={pages}"]
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*testweb.seeds(2), *_args(testweb, *_extract(tmp_path), *sinks)])
    assert crawl.wait(600) == 0, crawl.log()[-4000:]
    truth = _jsonl(out, "items")
    assert len(truth) > 300 and max(truth.values()) == 1
    assert _collected_keys(items) == truth
    assert _collected_keys(pages) == _jsonl(out, "records")
    lines = {(row["url"], row["index"]): row["fields"] for row in collected(items)}
    for path in sorted((out / "items").glob("*.jsonl")):
        for own in map(json.loads, path.read_text().splitlines()):
            assert lines[(own["url"], own["index"])] == own["fields"]


def test_a_user_sink_after_kill_9_and_resume_has_every_item_by_its_key(testweb: TestWeb, tmp_path: Path) -> None:
    """At least once: a page in flight at the kill is delivered again after the resume, with the same key."""
    items = tmp_path / "items.jsonl"
    out = tmp_path / "crawl"
    sink = ["--items-to", f"{USER_SINK}?path={items}"]
    crawl = Crawl(out, [*testweb.seeds(2), *_args(testweb, *_extract(tmp_path), *sink)])
    wait_until(lambda: len(records(out)) >= 150, 300, "150 records", crawl)
    crawl.kill_node()
    resume = Crawl(out, _args(testweb), log_name="resume.log")  # the sink comes from the saved settings
    assert resume.wait(600) == 0, resume.log()[-4000:]
    truth = _jsonl(out, "items")
    assert len(truth) > 300
    assert set(_collected_keys(items)) == set(truth)


def test_a_user_sink_that_raises_stops_the_node_with_one_line_and_a_resume_loses_nothing(
    testweb: TestWeb, tmp_path: Path
) -> None:
    """A bug in a user's sink (its ``write`` raises) stops the node at once with one line naming the sink, the error
    and where: no restarts that would fail the same way. The batch it failed on was not completed: a resume with
    the sink mended delivers every item."""
    items, out = tmp_path / "items.jsonl", tmp_path / "crawl"
    failing = ["--items-to", f"tests.fixtures.usersink:WriteFailsSink?path={items}&after=40"]
    crawl = Crawl(out, [*testweb.seeds(2), *_args(testweb, *_extract(tmp_path), *failing)])
    assert crawl.wait(600) == 1
    log = crawl.log()
    last = log.rstrip().splitlines()[-1]
    assert last.startswith(f"trawl: error: output collecting:{items} failed: ValueError: cannot encode field"), log
    assert "(usersink.py:" in last and "nothing is lost" in last
    assert "restarting" not in log and "died at start" not in log
    assert log.count("Traceback") <= 2  # the sink's, logged once by each parser it failed in, for its author
    mended = ["--items-to", f"tests.fixtures.usersink:WriteFailsSink?path={items}&after=1000000"]
    resume = Crawl(out, [*_args(testweb), *mended], log_name="resume.log")
    assert resume.wait(600) == 0, resume.log()[-4000:]
    truth = _jsonl(out, "items")
    assert len(truth) > 300 and max(truth.values()) == 1
    assert set(_collected_keys(items)) == set(truth)


def test_a_user_sink_that_cannot_be_imported_fails_at_start_with_one_line(testweb: TestWeb, tmp_path: Path) -> None:
    args = [*testweb.seeds(1), *_args(testweb, *_extract(tmp_path), "--out", str(tmp_path / "crawl"))]
    done = subprocess.run(
        [sys.executable, "-m", "webtrawl", "crawl", *args, "--items-to", "tests.fixtures.nosuchmodule:Sink?path=x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert done.stderr.startswith("trawl: error: --items-to tests.fixtures.nosuchmodule:Sink: cannot import")
    assert done.stderr.count("\n") == 1, done.stderr


def test_a_resume_naming_other_sinks_seals_the_files_a_killed_run_left_in_the_old_ones(
    testweb: TestWeb, tmp_path: Path
) -> None:
    """kill -9 of the node, then a resume with --items-to naming another sink: the Parquet and JSON sinks the crawl
    wrote to before were never opened again, so nothing sealed them: the Parquet files stayed .open without their
    footer (pyarrow cannot read them) and the JSON file without the rows of its journals, for good."""
    out = tmp_path / "crawl"
    pq_dir, json_file = tmp_path / "pq", tmp_path / "items.json"
    before = ["--items-to", f"parquet:{pq_dir}", "--items-to", f"json:{json_file}"]
    crawl = Crawl(out, [*testweb.seeds(3), *_args(testweb, *_extract(tmp_path), *before)])

    def stored() -> bool:  # items of completed pages (in every sink before their URLs are completed): kept by a kill
        return (out / "crawl.json").exists() and stats(out)["counters"].get("items", 0) >= 10

    wait_until(stored, 300, "10 items stored", crawl)
    crawl.kill_node()
    assert list(pq_dir.glob("*.open"))
    resumed = Crawl(out, [*_args(testweb, "--items-to", f"csv:{tmp_path / 'csv'}")], log_name="resume.log")
    assert resumed.wait(600) == 0, resumed.log()[-4000:]

    assert not list(pq_dir.glob("*.open"))
    in_parquet = [row["url"] for path in sorted(pq_dir.glob("*.parquet")) for row in pq.read_table(path).to_pylist()]
    assert in_parquet
    in_json = Counter(row["url"] for row in json.loads(json_file.read_text()))
    # the rows the killed run wrote, the JSON file rebuilt with them: every Parquet row's page with all its rows. The
    # JSON may hold more: the rows of a batch begun at the kill stay in its journal (the latest line of a URL wins,
    # nothing is cut back), where the Parquet series is cut back to the batch's mark
    counts = Counter(in_parquet)
    assert {url: n for url, n in in_json.items() if url in counts} == counts
