"""``postgresql://USER@HOST/DB?table=NAME``: items or page records in a PostgreSQL table (psycopg 3).

One transaction per batch: the batch's rows are COPYed into a temporary staging table (fast, one round trip), the
URLs' old rows in this crawl are deleted, and one ``INSERT ... SELECT ... ON CONFLICT DO UPDATE`` moves the rows into
the table, so several nodes of one crawl can write one table and a key is never doubled. Table changes (create, add
columns) are serialised between nodes by a transaction-scoped advisory lock.

The key's URL part is ``_url_sha256`` (bytea, the SHA-256 of the URL's UTF-8, which the sink computes): a B-tree
entry holds at most ~2.7 KB, less than a long URL (``--max-url-length``). A table made by a webtrawl before that
has no such column and keeps its key on the whole URL, as it was made (so its URLs must stay under ~2.7 KB).

A server that goes away (restart, network, disk full, too many connections) raises
:class:`~webtrawl.errors.SinkUnavailable` after the transaction rolled back; the next write reconnects.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Sequence
from typing import Any

import psycopg

from webtrawl.errors import ConfigError, SinkUnavailable
from webtrawl.formats.sinkurl import SinkUrl
from webtrawl.store.base import Sink, SinkContext
from webtrawl.store.sinks.rows import Rows, What
from webtrawl.store.sinks.schema import URL_KEY, Kind
from webtrawl.store.sinks.sqltable import SqlSink, quote

_CONNECT = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "application_name": "webtrawl",
}
# SQLSTATE classes that mean "not now": connection (08), resources/disk full (53), operator intervention such as a
# shutdown (57), system error (58), serialisation failure or deadlock between two nodes (40).
_TRANSIENT_CLASSES = {"08", "53", "57", "58", "40"}
_TRANSIENT_STATES = {"42P07", "42701", "23505"}  # two nodes creating the same table or column at once
_NUL_JSON = re.compile(r"(?<!\\)((?:\\\\)*)\\u0000")
_STAGE = "pg_temp.webtrawl_stage"
_BUCKETS = 4095  # URL lock buckets - 1: few enough that a big batch stays within the server's lock table


def _no_nul(cell: Any) -> Any:
    """PostgreSQL text and jsonb cannot hold U+0000; it becomes U+FFFD (the only change a value ever sees)."""
    if isinstance(cell, str) and "\x00" in cell:
        return cell.replace("\x00", "\ufffd")
    return cell


def _json_cell(text: str) -> str:
    return _NUL_JSON.sub(r"\1\\ufffd", text) if "\\u0000" in text else text


def _digest(url: str) -> bytes:
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).digest()


def transient(exc: BaseException) -> bool:
    """The server's SQLSTATE says; without one (the connection is gone), a connection error is. An error of a class
    not listed (``54000``: an index entry too long, ``54011``: too many columns) is for good: it is raised."""
    state = getattr(exc, "sqlstate", None)
    if not state:
        return isinstance(exc, (psycopg.OperationalError, psycopg.InterfaceError))
    return state[:2] in _TRANSIENT_CLASSES or state in _TRANSIENT_STATES


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class PostgresSink(SqlSink):
    types = {
        Kind.TEXT: "text",
        Kind.BIGINT: "bigint",
        Kind.DOUBLE: "double precision",
        Kind.BOOLEAN: "boolean",
        Kind.JSON: "jsonb",
    }

    def __init__(self, conninfo: str, table: str | None, what: What, crawl_id: str, name: str) -> None:
        super().__init__(name, table, what, crawl_id)
        self.conninfo = conninfo
        self._conn: psycopg.Connection[Any] | None = None
        self._stage: tuple[str, ...] | None = None  # columns of the staging table of this connection
        self._lock_space = zlib.crc32(f"webtrawl rows {self.table}".encode()) - (1 << 31)  # an int4
        self._hashed = True  # the key is on _url_sha256 (False: a table made by an older webtrawl, on url)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def probe(self) -> None:
        """At start: reach the server and check the table (if it exists) is one of ours, or that it can be created
        (its schema exists, the user may create it: tried in a transaction rolled back). ConfigError if not."""
        try:
            with self._db().transaction():
                schema, exists = self._load()
                if not exists:
                    self._execute(self._create_sql(schema, {}))
                    raise psycopg.Rollback()  # ends the transaction, created nothing
                self._check_key()
        except SinkUnavailable as exc:
            raise ConfigError(f"cannot connect to {exc}") from None
        except psycopg.Error as exc:
            raise ConfigError(f"{self.name}: {_first_line(exc)}") from None

    def _check_key(self) -> None:
        """The table's key is ours (an upsert of no row finds it), or ConfigError: a table a user made with the
        key columns but another key would fail every write."""
        key = self._key()
        try:
            with self._db().transaction():
                self._execute(
                    f"INSERT INTO {self.qtable} ({key}) SELECT {key} FROM {self.qtable} WHERE false"
                    f" ON CONFLICT ({key}) DO NOTHING"
                )
        except psycopg.errors.InvalidColumnReference:
            raise self.not_ours(f"no primary key on ({key.replace(chr(34), '')})") from None

    def _db(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg.connect(self.conninfo, autocommit=True, **_CONNECT)  # type: ignore[arg-type]
            except psycopg.Error as exc:
                raise SinkUnavailable(f"{self.name}: {_first_line(exc)}") from exc
            self._stage = None
        return self._conn

    def _transaction(self, rows: Rows) -> None:
        conn = self._db()
        try:
            with conn.transaction():
                self._write(conn, rows)
        except psycopg.Error as exc:
            self._stage = None
            if transient(exc):
                self.close()
                raise SinkUnavailable(f"{self.name}: {_first_line(exc)}") from exc
            raise

    def _write(self, conn: psycopg.Connection[Any], rows: Rows) -> None:
        cur = conn.cursor()
        # Two nodes replacing one URL at once (it was leased again after an expiry) must not interleave their
        # delete and insert, or the one with fewer items keeps stale rows of the other: each transaction first takes
        # the advisory locks of its URLs' buckets, in one order (no deadlock), until it commits.
        buckets = sorted({zlib.crc32(url.encode()) & _BUCKETS for url in rows.urls})
        cur.execute(
            "SELECT pg_advisory_xact_lock(%s, b) FROM unnest(%s::int[]) WITH ORDINALITY AS t(b, n) ORDER BY n",
            (self._lock_space, buckets),
        )
        schema = self._grow(rows.rows)
        if self._hashed:
            urls = [_digest(url) for url in rows.urls]
            cur.execute(f"DELETE FROM {self.qtable} WHERE crawl = %s AND {URL_KEY} = ANY(%s)", (self.crawl_id, urls))
        else:
            cur.execute(f"DELETE FROM {self.qtable} WHERE crawl = %s AND url = ANY(%s)", (self.crawl_id, rows.urls))
        if not rows.rows:
            return
        names, cells = schema.cells(rows.rows, _json_cell)
        if self._hashed:
            at = names.index("url")
            names.append(URL_KEY)
            for row in cells:
                row.append(_digest(row[at]))
        columns = ", ".join(quote(n) for n in names)
        if self._stage != tuple(names):
            cur.execute(f"DROP TABLE IF EXISTS {_STAGE}")
            cur.execute(f"CREATE TEMP TABLE {_STAGE.split('.')[1]} (LIKE {self.qtable}) ON COMMIT DELETE ROWS")
            self._stage = tuple(names)
        with cur.copy(f"COPY {_STAGE} ({columns}) FROM STDIN") as copy:
            for row in cells:
                copy.write_row([_no_nul(cell) for cell in row])
        cur.execute(f"INSERT INTO {self.qtable} ({columns}) SELECT {columns} FROM {_STAGE}" + self._upsert_tail(names))

    def _lock_ddl(self) -> None:
        self._execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("webtrawl table " + self.table,))

    def _columns(self) -> dict[str, str] | None:
        found = (
            self._db()
            .execute(
                "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
                " WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
                (self.qtable,),
            )
            .fetchall()
        )
        columns = {str(name): str(sql) for name, sql in found}
        self._hashed = not columns or columns.pop(URL_KEY, None) is not None
        return columns or None

    def _add_column(self, name: str, kind: Kind) -> bool:
        try:
            with self._db().transaction():  # a savepoint: a refusal leaves the batch's transaction usable
                self._execute(self._add_column_sql(name, kind))
        except psycopg.errors.TooManyColumns as exc:  # 1600 at most, the dropped ones included
            self._why_full = _first_line(exc)
            return False
        return True

    def _hidden_columns(self) -> list[str]:
        return [f"{URL_KEY} bytea NOT NULL"]

    def _key(self) -> str:
        return ", ".join(URL_KEY if k == "url" and self._hashed else quote(k) for k in self.keys)

    def _execute(self, statement: str, params: Sequence[Any] = ()) -> None:
        self._db().execute(statement, params or None)  # no parameters: a % in a name is not a placeholder


def open_postgres(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    return PostgresSink(spec.target, spec.table, What(stream), ctx.crawl_id, spec.name)
