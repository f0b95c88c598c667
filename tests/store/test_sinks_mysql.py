"""The MariaDB/MySQL sink against the machine's real MariaDB: what PostgreSQL's tests show, for what differs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.mysql_fixtures import MYSQL_PORT, mysql_query
from tests.fixtures.tcp_proxy import TcpProxy
from tests.store.sinkdata import ctx, page, products
from webtrawl.errors import ConfigError, SinkUnavailable
from webtrawl.store import PageOutput
from webtrawl.store.registry import open_sink, probe
from webtrawl.store.sinks.mysql import MysqlSink


def test_a_url_too_long_for_an_index_and_odd_field_names_keep_one_row_per_key(mysql_url: str) -> None:
    url = "mariadb" + mysql_url.removeprefix("mysql")  # the other spelling
    sink = open_sink(url + "?table=t", "items", ctx(Path("/nonexistent")))
    long_url = "http://a.test/" + "x" * 5000
    odd = {"50% off": True, 'say "hi"': "q", "Ünïcode": "ü\x00", "n": 2**70, "x": 1.5}
    for _ in range(2):  # the same page twice (a resume): still one row per key
        sink.write([page(long_url, [odd, odd]), page(long_url + "y", [{**odd, "x": float("nan")}])])
    sink.close()
    rows = sorted(mysql_query(mysql_url, 'SELECT url, idx, "50% off", "say ""hi""", "Ünïcode", n, x FROM t'))
    assert [(len(r[0]), r[1]) for r in rows] == [(5014, 0), (5014, 1), (5015, 0)]
    assert rows[0][2:] == (1, "q", "ü\x00", str(2**70), 1.5) and rows[2][6] is None  # NaN: null, as in JSONL


def test_server_gone_raises_unavailable_then_the_same_batch_goes_in(mysql_url: str) -> None:
    with TcpProxy(MYSQL_PORT) as proxy:
        url = mysql_url.replace(f":{MYSQL_PORT}/", f":{proxy.port}/") + "?table=t"
        sink = open_sink(url, "items", ctx(Path("/nonexistent")))
        sink.write([products("http://a.test/1", 2)])
        proxy.cut()
        batch = [products("http://a.test/1", 1), products("http://a.test/2", 3)]
        for _ in range(2):  # the open connection is gone, and no new one is let in
            with pytest.raises(SinkUnavailable):
                sink.write(batch)
        assert mysql_query(mysql_url, "SELECT url, count(*) FROM t GROUP BY url") == [("http://a.test/1", 2)]
        proxy.restore()
        sink.write(batch)  # what the fan-out does once the server answers again
        sink.close()
    found = mysql_query(mysql_url, "SELECT url, count(*) FROM t GROUP BY url ORDER BY url")
    assert found == [("http://a.test/1", 1), ("http://a.test/2", 3)]


def _no_items(url: str) -> PageOutput:
    out = page(url)
    out.record.items = 0  # extracted, and gave none
    return out


def test_a_batch_is_not_held_by_another_parsers_open_batch_of_other_urls(mysql_url: str) -> None:
    """Two parsers' batches of other URLs waited on each other's gap locks (a DELETE of rows not there yet, under
    REPEATABLE READ) and deadlocked, each time an ERROR 'unavailable ... crawl paused' line and a 2 s pause."""
    earlier = open_sink(mysql_url + "?table=t", "items", ctx(Path("/nonexistent"), crawl="wt-1"))
    earlier.write([products("http://a.test/0", 1)])  # another crawl's row: this crawl's keys are all in one gap
    earlier.close()
    first = open_sink(mysql_url + "?table=t", "items", ctx(Path("/nonexistent")))
    second = open_sink(mysql_url + "?table=t", "items", ctx(Path("/nonexistent")))
    assert isinstance(first, MysqlSink)
    conn = first._db()  # the first parser's batch, in flight: its URL's old rows deleted, not yet committed
    batch = first.rows([_no_items("http://a.test/1")])
    first._replace(conn, first._grow(batch.rows), batch)
    second._execute("SET SESSION innodb_lock_wait_timeout = 1")  # a wait is a SinkUnavailable at once
    try:
        second.write([products("http://a.test/2", 2)])
    finally:
        conn.commit()
        first.close()
        second.close()
    found = mysql_query(mysql_url, "SELECT crawl, url, count(*) FROM t GROUP BY crawl, url ORDER BY crawl")
    assert found == [("wt-1", "http://a.test/0", 1), ("wt-1700000000", "http://a.test/2", 2)]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://nosuchuser:s3cret@127.0.0.1:3306/test?table=x", "nosuchuser"),
        ("mysql://root@127.0.0.1:3306/no_such_db_wt", "no_such_db_wt"),
        ("mysql://u:s3cret@127.0.0.1:1/db", "cannot connect"),
        ("mysql://root@127.0.0.1:3306/", "name the database"),
        ("mysql://root@127.0.0.1:3306/db?sslmode=x", "unknown option 'sslmode'"),
        ("mysql://root@127.0.0.1:3306/test?ssl_ca=/nonexistent/ca.pem", "cannot use ssl_ca=/nonexistent/ca.pem"),
        (f"mysql://root@127.0.0.1:3306/test?table=x&ssl_cert={__file__}", "cannot use ssl_cert="),  # not a PEM file
    ],
)
def test_bad_target_is_one_line_at_start_with_the_password_masked(mysql_url: str, url: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        probe(url, "items")
    text = str(info.value)
    assert message in text and "s3cret" not in text and "\n" not in text


def test_a_table_name_with_two_dots_is_read_where_it_was_created(mysql_url: str) -> None:
    """``DB.a.b`` is table ``a.b`` in database DB, when created and when its columns are read back: a later batch with
    a new field adds a column to that table instead of failing to find it."""
    database = mysql_url.rsplit("/", 1)[1]
    sink = open_sink(f"{mysql_url}?table={database}.a.b", "items", ctx(Path("/nonexistent")))
    sink.write([page("http://a.test/1", [{"price": 1}])])
    sink.close()
    sink = open_sink(f"{mysql_url}?table={database}.a.b", "items", ctx(Path("/nonexistent")))
    sink.write([page("http://a.test/2", [{"price": 2, "name": "two"}])])
    sink.close()
    rows = mysql_query(mysql_url, "SELECT url, price, name FROM `a.b` ORDER BY url")
    assert rows == [("http://a.test/1", 1, None), ("http://a.test/2", 2, "two")]


def test_a_users_table_with_the_key_columns_but_not_ours_is_refused_at_start(mysql_url: str) -> None:
    """It passed the check of the key columns, then every write failed (no column _url_sha256), which the sink took
    for an outage: the crawl waited forever."""
    mysql_query(mysql_url, "CREATE TABLE mine (crawl varchar(255), url text, idx bigint, note text)")
    with pytest.raises(ConfigError, match=r"table mine has no column '_url_sha256', so it is not a webtrawl items"):
        probe(mysql_url + "?table=mine", "items")
    sink = open_sink(mysql_url + "?table=mine", "items", ctx(Path("/nonexistent")))
    with pytest.raises(ConfigError, match="_url_sha256"):  # nor is it taken for an outage once the crawl runs
        sink.write([products("http://a.test/1", 1)])


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def test_a_value_nested_32_deep_is_kept_as_its_json_text(mysql_url: str) -> None:
    """MariaDB's json columns refuse a value nested 32 deep or more (a comment thread, a category tree): the write
    failed, was taken for an outage, and the crawl waited forever."""
    sink = open_sink(mysql_url + "?table=t", "items", ctx(Path("/nonexistent")))
    deep, shallow = _nested(40), _nested(31)
    sink.write([page("http://a.test/1", [{"tree": shallow, "n": 1}, {"tree": deep, "n": "deep"}])])
    sink.close()
    rows = mysql_query(mysql_url, "SELECT idx, tree, _extra FROM t ORDER BY idx")
    assert json.loads(rows[0][1]) == shallow and rows[0][2] is None
    assert json.loads(json.loads(rows[1][1])) == deep and json.loads(rows[1][2]) == {"n": "deep"}


def test_a_row_over_the_servers_max_allowed_packet_is_one_clear_error(mysql_url: str) -> None:
    """The server drops the connection on a statement over max_allowed_packet (16 MB by default): the sink took it
    for an outage, and the crawl waited forever. Rows up to it go in."""
    (packet,) = mysql_query(mysql_url, "SELECT @@max_allowed_packet")[0]
    sink = open_sink(mysql_url + "?table=t", "items", ctx(Path("/nonexistent")))
    sink.write([page("http://a.test/1", [{"text": "x" * (packet - 100_000)}])])
    with pytest.raises(ConfigError, match=r"the row http://a.test/2 #0 is \d+ bytes, over the server's max_allowed"):
        sink.write([page("http://a.test/2", [{"text": "x" * (packet + 1)}])])
    sink.close()
    assert mysql_query(mysql_url, "SELECT url, length(text) FROM t") == [("http://a.test/1", packet - 100_000)]


def test_a_row_over_max_allowed_packet_once_escaped_is_one_clear_error(mysql_url: str) -> None:
    """The size was estimated from the characters alone: quotes, backslashes and newlines go out escaped (two bytes
    each), so a row of them under the estimate reached the server over its packet."""
    (packet,) = mysql_query(mysql_url, "SELECT @@max_allowed_packet")[0]
    sink = open_sink(mysql_url + "?table=t", "items", ctx(Path("/nonexistent")))
    with pytest.raises(ConfigError, match=r"the row http://a.test/2 #0 is \d+ bytes, over the server's max_allowed"):
        sink.write([page("http://a.test/2", [{"text": '"' * (packet - 100_000)}])])
    sink.close()
