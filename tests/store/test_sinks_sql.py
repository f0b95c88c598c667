"""SQLite, PostgreSQL and MariaDB sinks against real databases: one set of rows per URL, growing tables, no loss."""

from __future__ import annotations

import json
import sqlite3
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.fixtures.mysql_fixtures import mysql_query
from tests.store.sinkdata import ctx, page, products
from webtrawl.errors import ConfigError, SinkUnavailable
from webtrawl.store import Sink
from webtrawl.store.registry import open_sink, probe

Query = Callable[[str], list[tuple[Any, ...]]]


class Db:
    def __init__(self, url: str, query: Query, kind: str) -> None:
        self.url, self.query, self.kind = url, query, kind

    def sink(self, what: str = "items", crawl: str = "wt-1", table: str | None = None) -> Sink:
        url = self.url + (f"?table={table}" if table else "")
        return open_sink(url, what, ctx(Path("/nonexistent"), crawl))


@pytest.fixture(params=["sqlite", "postgresql", "mysql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Db]:
    if request.param == "sqlite":
        path = tmp_path / "sub" / "items.db"

        def lite(sql: str) -> list[tuple[Any, ...]]:
            with sqlite3.connect(path) as conn:
                return conn.execute(sql).fetchall()

        yield Db(f"sqlite:///{path}", lite, "sqlite")
        return
    if request.param == "mysql":
        my_url = request.getfixturevalue("mysql_url")
        yield Db(my_url, lambda sql: mysql_query(my_url, sql), "mysql")
        return
    url = request.getfixturevalue("pg_url")

    def pg(sql: str) -> list[tuple[Any, ...]]:
        with psycopg.connect(url) as conn:
            return conn.execute(sql).fetchall()  # type: ignore[arg-type]

    yield Db(url, pg, "postgresql")


def test_items_land_once_and_a_url_extracted_again_keeps_only_its_new_rows(db: Db) -> None:
    sink = db.sink()
    sink.write([products("http://a.test/1", 3), products("http://a.test/2", 5), page("http://a.test/3")])
    sink.flush()
    assert db.query("SELECT count(*) FROM items") == [(8,)]
    # The same URLs again (fetched twice around a kill): fewer items for /2, the same for /1: no stale, no double.
    sink.write([products("http://a.test/2", 2), products("http://a.test/1", 3)])
    sink.write([products("http://a.test/1", 3), products("http://a.test/1", 1)])  # twice in one batch: last wins
    rows = db.query("SELECT url, idx, name, price, sku, in_stock, crawl, fetch_time FROM items ORDER BY url, idx")
    assert [(r[0], r[1]) for r in rows] == [("http://a.test/1", 0), ("http://a.test/2", 0), ("http://a.test/2", 1)]
    assert rows[1][2:5] == ("P0 of http://a.test/2", 10.5, 0)
    assert rows[0][5] in (True, 1) and rows[0][6] == "wt-1" and rows[0][7].startswith("2026-11-23T18")
    sink.close()


def test_another_crawl_in_the_same_table_is_left_alone(db: Db) -> None:
    first, second = db.sink(crawl="wt-1"), db.sink(crawl="wt-2")
    first.write([products("http://a.test/1", 4)])
    second.write([products("http://a.test/1", 1)])
    assert db.query("SELECT crawl, count(*) FROM items GROUP BY crawl ORDER BY crawl") == [("wt-1", 4), ("wt-2", 1)]
    first.close()
    second.close()


def test_new_fields_add_columns_and_misfits_go_to_extra(db: Db) -> None:
    sink = db.sink(table="products")
    sink.write([page("http://a.test/1", [{"price": 5, "name": "x", "url": "field named url", "Name": "twin"}])])
    sink.write([page("http://a.test/2", [{"price": "n/a", "colour": "red", "meta": {"k": [1, 2]}, "name": 7}])])
    sink.write([page("http://a.test/3", [{"price": 2.5, "nothing": None}])])
    rows = db.query("SELECT url, price, name, url_, colour, meta, _extra FROM products ORDER BY url")
    extra = [json.loads(r[6]) if isinstance(r[6], str) else r[6] for r in rows]
    meta = rows[1][5] if db.kind == "postgresql" else json.loads(rows[1][5])
    assert rows[0][1:4] == (5, "x", "field named url") and extra[0] == {"Name": "twin"}
    assert rows[1][1] is None and extra[1] == {"price": "n/a"}  # kept, not refused, not lost
    assert rows[1][2] == "7" and rows[1][4] == "red" and meta == {"k": [1, 2]}
    assert rows[2][1] is None and extra[2] == {"price": 2.5}  # bigint column: a float does not fit
    sink.close()
    # A new process reads the grown table back and goes on.
    again = db.sink(table="products")
    again.write([page("http://a.test/4", [{"price": 9, "colour": "blue", "weight": 1.5}])])
    assert db.query("SELECT price, colour, weight FROM products WHERE url = 'http://a.test/4'") == [(9, "blue", 1.5)]
    again.close()


def test_an_integer_beyond_64_bits_is_read_back_exactly(db: Db) -> None:
    """Such an integer types a JSON column; SQLite stored it there as a float (2**70 + 1 read back as
    1.1805916207174113e+21): it is in the row's _extra there, exact."""
    big = 2**70 + 1
    sink = db.sink(table="wide")
    sink.write([page("http://a.test/1", [{"wei": big, "ids": [big, 1]}]), page("http://a.test/2", [{"wei": -big}])])
    sink.write([page("http://a.test/3", [{"wei": 5}])])
    sink.close()
    rows = db.query("SELECT wei, ids, _extra FROM wide ORDER BY url")
    cells = [[json.loads(c) if isinstance(c, str) else c for c in row] for row in rows]
    assert [extra["wei"] if wei is None else wei for wei, _, extra in cells] == [big, -big, 5]
    assert cells[0][1] == [big, 1]


def test_page_records_upsert_on_crawl_and_url(db: Db) -> None:
    sink = db.sink("records", table="pages")
    sink.write([page("http://a.test/1"), page("http://a.test/2", error="timeout", error_detail="x\x00y")])
    sink.write([page("http://a.test/1", outlinks=7)])
    rows = db.query("SELECT url, status, outlinks, error, noindex, elapsed_ms FROM pages ORDER BY url")
    assert [r[:4] for r in rows] == [("http://a.test/1", 200, 7, None), ("http://a.test/2", 200, 0, "timeout")]
    assert rows[0][4] in (False, 0) and rows[0][5] == 0.0
    sink.close()


def test_probe_refuses_a_table_that_is_not_ours(db: Db) -> None:
    sink = db.sink("records")
    sink.write([page("http://a.test/1")])
    sink.close()
    probe(db.url, "records")
    with pytest.raises(ConfigError, match=r"has no column 'idx'.*not a webtrawl items table"):
        probe(db.url + "?table=pages", "items")


def test_postgres_connection_lost_raises_unavailable_then_the_same_batch_goes_in(pg_url: str) -> None:
    sink = open_sink(pg_url + "?table=t", "items", ctx(Path("/nonexistent")))
    sink.write([products("http://a.test/1", 2)])
    with psycopg.connect(pg_url, autocommit=True) as admin:  # the server ends the sink's session (a restart would)
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'webtrawl'")
    batch = [products("http://a.test/1", 1), products("http://a.test/2", 3)]
    with pytest.raises(SinkUnavailable):
        sink.write(batch)
    with psycopg.connect(pg_url) as conn:  # rolled back: the old rows, not half of the new ones
        assert conn.execute("SELECT url, count(*) FROM t GROUP BY url").fetchall() == [("http://a.test/1", 2)]
    sink.write(batch)  # what the fan-out does once the database answers again
    with psycopg.connect(pg_url) as conn:
        found = conn.execute("SELECT url, count(*) FROM t GROUP BY url ORDER BY url").fetchall()
    assert found == [("http://a.test/1", 1), ("http://a.test/2", 3)]
    sink.close()


def test_a_postgres_url_with_no_host_but_in_its_query_reaches_the_server(pg_url: str) -> None:
    """libpq's ``postgresql:///DB?host=/var/run/postgresql`` (a socket directory, or here an address) lost its
    ``//`` on the way to the driver: 'invalid connection option "postgresql:/DB?host"', at start."""
    parts = urllib.parse.urlsplit(pg_url)
    query = f"host={parts.hostname}&port={parts.port or 5432}&user={parts.username}"
    url = f"postgresql://{parts.path}?{query}&table=t"
    sink = open_sink(url, "items", ctx(Path("/nonexistent")))
    sink.write([products("http://a.test/1", 2)])
    sink.close()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT url, count(*) FROM t GROUP BY url").fetchall() == [("http://a.test/1", 2)]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://nosuchuser:s3cret@127.0.0.1:5432/postgres?table=x", "nosuchuser"),
        ("postgresql://postgres@127.0.0.1:5432/no_such_db_wt", "no_such_db_wt"),
        ("postgresql://u:s3cret@127.0.0.1:1/db?password=s3cret", "cannot connect"),
    ],
)
def test_postgres_bad_target_is_one_line_at_start_with_the_password_masked(
    pg_admin_url: str, url: str, message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        probe(url, "items")
    text = str(info.value)
    assert message in text and "s3cret" not in text and "\n" not in text


def test_sqlite_file_that_is_not_a_database_fails_at_start(tmp_path: Path) -> None:
    bad = tmp_path / "x.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(ConfigError, match=r"x\.db"):
        probe(f"sqlite:///{bad}", "items")


def test_two_nodes_replacing_the_same_urls_at_once_leave_one_whole_set_each(db: Db) -> None:
    """Each writer gives every URL a different number of items; whatever the interleaving, a URL ends with exactly
    one writer's set (never one writer's first rows plus the other's stale tail)."""
    urls = [f"http://a.test/{i}" for i in range(12)]
    failures: list[BaseException] = []

    def node(name: str, items: int) -> None:
        sink = db.sink(table="shared")
        try:
            for round_ in range(40):
                batch = [page(u, [{"writer": name, "round": round_}] * items) for u in urls]
                while True:
                    try:
                        sink.write(batch)
                        break
                    except SinkUnavailable:  # a deadlock or serialisation failure: the fan-out retries
                        continue
        except BaseException as exc:
            failures.append(exc)
        finally:
            sink.close()

    threads = [threading.Thread(target=node, args=(name, n)) for name, n in (("a", 2), ("b", 5), ("c", 3))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    found: dict[str, Counter[str]] = {}
    for url, writer, count in db.query("SELECT url, writer, count(*) FROM shared GROUP BY url, writer"):
        found.setdefault(url, Counter())[writer] = count
    assert len(found) == len(urls)
    for url, writers in found.items():
        assert len(writers) == 1 and {"a": 2, "b": 5, "c": 3}[next(iter(writers))] == writers.total(), (url, writers)


def test_fields_named_like_the_key_columns_keep_a_column_each(db: Db) -> None:
    """A field ``url`` goes to ``url_``; a field ``url_`` beside it went there too and one value was lost. A field
    ``_url_sha256`` (the key's own column in MariaDB and PostgreSQL) was added as a second such column in MariaDB,
    which refused it, and the crawl waited for it forever."""
    sink = db.sink(table="named")
    fields = {"url": "a", "url_": "b", "url__": "c", "idx_": 7, "_extra": "d", "fetch_time_": "e", "_url_sha256": 1}
    sink.write([page("http://a.test/1", [fields])])
    rows = db.query("SELECT url_, url__, url___, idx__, _extra_, fetch_time__, _extra, _url_sha256_ FROM named")
    assert rows == [("a", "b", "c", 7, "d", "e", None, 1)]
    sink.close()


def test_field_names_from_a_pages_own_text_keep_a_column_each(db: Db) -> None:
    """Fields named by a page (``{th: td}`` of a spec table): an empty name or one ending in a space was refused by
    MariaDB and a ``%`` in one by psycopg (a placeholder), and the parsers died on the page until the node stopped.
    The empty name is ``_`` and a trailing space gets ``_`` (apart from a field ``_``, in ``__``), everywhere."""
    sink = db.sink(table="spec")
    fields = {"": "e", "_": "u", "kg ": 1, "kg": 2, "discount %": 5, "%s": "p", "%(x)s": "q"}
    sink.write([page("http://a.test/1", [fields])])
    sink.close()
    rows = db.query('SELECT "_", "__", "kg _", "kg", "discount %", "%s", "%(x)s", _extra FROM spec')
    assert rows == [("e", "u", 1, 2, 5, "p", "q", None)]


def test_a_nul_in_a_field_name_is_a_replacement_character_not_a_crawl_stopped(db: Db) -> None:
    """A NUL in a field's name (a ``{th: td}`` of a page with one) is in no database's identifiers: PostgreSQL and
    MariaDB refused the CREATE TABLE as a syntax error and the node stopped. It is U+FFFD, as in a text cell."""
    sink = db.sink(table="nul")
    sink.write([page("http://a.test/1", [{"a\x00b": 1, "c": "d\x00"}])])
    sink.close()
    assert db.query('SELECT "a\ufffdb", _extra FROM nul') == [(1, None)]


def test_a_field_name_with_an_emoji_has_a_column_or_in_mariadb_stays_in_extra(db: Db) -> None:
    """MariaDB names hold no character beyond U+FFFF: it refused the CREATE TABLE ('Invalid utf8mb4 character
    string') and the node stopped on the first page with a field such as ``"🔥 deals"``."""
    sink = db.sink(table="emoji")
    sink.write([page("http://a.test/1", [{"🔥 deals": 3, "é": "e"}])])
    sink.close()
    if db.kind == "mysql":
        (extra, e), *_ = db.query('SELECT _extra, "é" FROM emoji')
        assert (json.loads(extra), e) == ({"🔥 deals": 3}, "e")
    else:
        assert db.query('SELECT "🔥 deals", "é", _extra FROM emoji') == [(3, "e", None)]


def test_fields_past_the_most_columns_a_table_takes_go_to_extra(db: Db) -> None:
    """Pages whose items have fields of their own (a spec table's rows, say) reach the database's limit on a table's
    columns (PostgreSQL 1600, SQLite 2000, MariaDB's row size at a few hundred): the column was refused, which the
    sink took for an outage (or raised), and the crawl waited forever. The fields past it go to ``_extra``."""
    sink = db.sink(table="wide")
    per_page, pages = 150, {"sqlite": 14, "postgresql": 11}.get(db.kind, 3)
    for p in range(pages):
        fields = {f"spec {p * per_page + i}": f"v{p * per_page + i}" for i in range(per_page)}
        sink.write([page(f"http://a.test/{p}", [fields])])
    sink.close()
    found: dict[str, str] = {}
    for row in db.query("SELECT _extra FROM wide"):
        found.update(json.loads(row[0]) if isinstance(row[0], str) else row[0] or {})
    named = {f"spec {i}" for i in range(per_page * pages)} - set(found)
    assert named and found  # some in columns, the rest in _extra
    cells = db.query("SELECT " + ", ".join(f'"{name}"' for name in sorted(named)) + " FROM wide")
    found.update({name: cell for row in cells for name, cell in zip(sorted(named), row, strict=True) if cell})
    assert found == {f"spec {i}": f"v{i}" for i in range(per_page * pages)}


def test_a_sqlite_option_misspelt_is_refused_at_start(tmp_path: Path) -> None:
    """``?tabel=products`` was ignored: the rows went to the table ``items``, as MySQL's and PostgreSQL's sinks
    refuse an unknown option."""
    with pytest.raises(ConfigError, match=r"^sink 'sqlite:///.*x\.db\?tabel=p': unknown option 'tabel' \(use table\)$"):
        probe(f"sqlite:///{tmp_path / 'x.db'}?tabel=p", "items")
    with pytest.raises(ConfigError, match=r"unknown option 'mode'"):
        probe(f"sqlite:///{tmp_path / 'x.db'}?table=p&mode=ro", "items")
    assert not (tmp_path / "x.db").exists()


def test_a_table_that_cannot_be_created_fails_at_start_and_a_probe_creates_nothing(db: Db) -> None:
    """?table=nosuch.items (a schema / database that does not exist) passed the probe: then every parser died at its
    first batch with a traceback, three times, and the node stopped with 'parser-0 died at start'."""
    if db.kind == "sqlite":
        pytest.skip("SQLite has no schemas: its table is always creatable in a writable file")
    with pytest.raises(ConfigError, match=r"nosuch_wt") as info:
        probe(db.url + "?table=nosuch_wt.items", "items")
    assert "\n" not in str(info.value)
    probe(db.url + "?table=fresh", "items")  # a table that can be created: fine, and not created by the probe
    found = db.query("SELECT count(*) FROM information_schema.tables WHERE table_name = 'fresh'")
    assert found == [(0,)]
