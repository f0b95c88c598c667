"""``mysql://USER:PW@HOST:PORT/DB?table=NAME`` (or ``mariadb://``): items or page records in a MySQL/MariaDB table.

The same table logic as PostgreSQL (:mod:`~webtrawl.store.sinks.sqltable`): one transaction per batch deletes the
batch's URLs' rows of this crawl and inserts the new ones with ``INSERT ... ON DUPLICATE KEY UPDATE`` on the same key,
(crawl, url, idx) for items and (crawl, url) for page records, so a kill -9 and a resume leave one row per key.
InnoDB cannot index a whole URL (3072 bytes at most), so the key's URL part is a stored generated column
``_url_sha256`` (the URL's SHA-256), and the key is a unique index over it. Identifiers are double-quoted as
elsewhere (the session runs with ``ANSI_QUOTES``). Table changes between nodes are serialised by ``GET_LOCK``.

PyMySQL (pure Python, a synchronous driver for a synchronous parser; ``pip install 'webtrawl[mysql]'``). A server
that goes away raises :class:`~webtrawl.errors.SinkUnavailable` after the rollback; the next write reconnects.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from webtrawl.errors import ConfigError, SinkUnavailable
from webtrawl.formats.sinkurl import SinkUrl
from webtrawl.optional import missing_extra
from webtrawl.store.base import Sink, SinkContext
from webtrawl.store.sinks.rows import Rows, What
from webtrawl.store.sinks.schema import URL_KEY, Kind, Schema, json_text
from webtrawl.store.sinks.sqltable import SqlSink, quote, split_table

try:
    import pymysql
except ImportError as exc:  # pragma: no cover - the extra is in dev
    raise missing_extra(exc, needed_by="the mysql/mariadb sink", extra="mysql", package="PyMySQL") from None

_SESSION = "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@sql_mode, ''), 'ANSI_QUOTES'), time_zone = '+00:00'"
# What information_schema says -> the SQL type we create (so a table read back maps to the same Kind).
_BACK = {"mediumtext": "mediumtext", "bigint": "bigint", "double": "double", "tinyint": "boolean"}
_BACK |= {"json": "json", "longtext": "json"}  # MariaDB's json is a longtext with a json_valid check
_OPTIONS = {"unix_socket", "ssl_ca", "ssl_cert", "ssl_key"}
# Server errors that mean "not now": disk or table full, out of memory or resources, too many connections, shutting
# down, connection aborted or killed, lock wait timeout or deadlock (two nodes), commit failed, read-only (a
# failover), a column or table created by another node at once, MySQL's idle disconnect.
_TRANSIENT = {1021, 1030, 1037, 1038, 1040, 1041, 1050, 1053, 1060, 1077, 1078, 1079, 1080, 1114, 1152, 1158}
_TRANSIENT |= {1159, 1160, 1161, 1180, 1184, 1203, 1205, 1213, 1290, 1317, 1792, 1836, 1927, 4031}
_TOO_WIDE = {1117, 1118}  # too many columns, row size too large
_MAX_DEPTH = 32  # MariaDB's json_valid (the check of a json column) refuses a value nested this deep
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


def connect_params(target: str, name: str) -> dict[str, Any]:
    """PyMySQL's keyword arguments for ``mysql://USER:PW@HOST:PORT/DB?unix_socket=...``."""
    parts = urllib.parse.urlsplit(target)
    database = urllib.parse.unquote(parts.path.lstrip("/"))
    if not database:
        raise ConfigError(f"sink {name!r}: name the database (mysql://USER@HOST/DB)")
    params: dict[str, Any] = {
        "host": parts.hostname or "localhost",
        "port": parts.port or 3306,
        "user": urllib.parse.unquote(parts.username or "root"),
        # like libmysqlclient: MYSQL_PWD when the URL has none (passwords are not saved for a resume)
        "password": urllib.parse.unquote(parts.password) if parts.password else os.environ.get("MYSQL_PWD", ""),
        "database": database,
    }
    for key, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True):
        if key not in _OPTIONS:
            raise ConfigError(f"sink {name!r}: unknown option {key!r} (use table, {', '.join(sorted(_OPTIONS))})")
        params[key] = value
    return params


def transient(exc: BaseException) -> bool:
    """Connection lost or refused, server shutting down, too many connections, lock wait, deadlock, disk full,
    read-only for a failover: not now. PyMySQL makes every other server error an OperationalError too (an unknown
    column, a row too large, a JSON value MariaDB refuses): those are for good, and raised."""
    if isinstance(exc, pymysql.err.InterfaceError):
        return True
    code = exc.args[0] if isinstance(exc, pymysql.err.OperationalError) and exc.args else None
    return isinstance(code, int) and (code in _TRANSIENT or 2000 <= code < 3000)  # 2xxx: the client's own


def _first_line(exc: BaseException) -> str:
    args: tuple[Any, ...] = getattr(exc, "args", ())
    text = str(args[1]) if len(args) == 2 else str(exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def _q(name: str) -> str:
    """Quoted for a statement with parameters: PyMySQL formats those with ``%``, so a ``%`` in a name is doubled."""
    return quote(name).replace("%", "%%")


def _json_cell(text: str) -> str:
    """A JSON cell MariaDB takes: one nested 32 deep or more is kept as its JSON text, in a JSON string."""
    if text.count("[") + text.count("{") < _MAX_DEPTH:
        return text
    bare = _JSON_STRING.sub("", text)
    depth = max(itertools.accumulate(1 if c in "[{" else -1 for c in bare if c in "[]{}"), default=0)
    return json_text(text) if depth >= _MAX_DEPTH else text


def _read_committed(conn: pymysql.connections.Connection[Any]) -> None:
    """Batches of other URLs (two parsers, two nodes) must not wait on each other: under REPEATABLE READ, a batch's
    DELETE of rows not there yet locks the gaps around them, and two batches inserting into each other's gaps
    deadlocked (each a paused crawl and an ERROR line). Not with statement-based binary logging, which InnoDB
    refuses under READ COMMITTED."""
    with conn.cursor() as cur:
        cur.execute("SELECT @@log_bin, @@binlog_format")
        log_bin, binlog_format = cur.fetchone() or (0, "")
        if not log_bin or str(binlog_format).upper() != "STATEMENT":
            cur.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    conn.commit()


def _finite(cells: list[list[Any]], doubles: list[int]) -> None:
    """MySQL has no NaN or infinity: such a value is null, as in the crawl's JSONL."""
    for row in cells:
        for i in doubles:
            value = row[i]
            if value is not None and not math.isfinite(value):
                row[i] = None


class MysqlSink(SqlSink):
    types = {
        Kind.TEXT: "mediumtext",
        Kind.BIGINT: "bigint",
        Kind.DOUBLE: "double",
        Kind.BOOLEAN: "boolean",
        Kind.JSON: "json",
    }

    def __init__(self, target: str, table: str | None, what: What, crawl_id: str, name: str) -> None:
        super().__init__(name, table, what, crawl_id)
        self._params = connect_params(target, name)
        self._conn: pymysql.connections.Connection[Any] | None = None
        self._locked = False
        self._packet = 0  # the server's max_allowed_packet, once asked

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            with contextlib.suppress(pymysql.Error):  # already gone
                conn.close()

    def probe(self) -> None:
        """At start: reach the server and check the table (if it exists) is one of ours, or that the database it is
        to be created in exists (``?table=DB.NAME``). ConfigError if not."""
        try:
            _, exists = self._load()
            database = split_table(self.table)[0]
            if not exists and database:
                with self._db().cursor() as cur:
                    cur.execute("SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s", (database,))
                    found = cur.fetchone()
                self._db().commit()
                if found is None:
                    raise ConfigError(f"{self.name}: no database {database!r} to create table {self.table} in")
        except SinkUnavailable as exc:
            raise ConfigError(f"cannot connect to {exc}") from None
        except pymysql.Error as exc:
            raise ConfigError(f"{self.name}: {_first_line(exc)}") from None

    def _db(self) -> pymysql.connections.Connection[Any]:
        if self._conn is None or not self._conn.open:
            try:
                self._conn = pymysql.connect(
                    **self._params,
                    charset="utf8mb4",
                    autocommit=False,
                    connect_timeout=10,
                    read_timeout=120,
                    write_timeout=120,
                    init_command=_SESSION,
                    max_allowed_packet=1 << 30,  # the server's own limit is the one that counts (checked per row)
                )
                _read_committed(self._conn)
            except pymysql.Error as exc:
                raise SinkUnavailable(f"{self.name}: {_first_line(exc)}") from exc
            except OSError as exc:  # PyMySQL reads ssl_ca/ssl_cert/ssl_key before it connects (and wraps socket errors)
                files = ", ".join(f"{k}={v}" for k, v in self._params.items() if k.startswith("ssl_"))
                raise ConfigError(f"{self.name}: cannot use {files}: {exc.strerror or exc}") from None
        return self._conn

    def _transaction(self, rows: Rows) -> None:
        conn = self._db()
        try:
            try:
                schema = self._grow(rows.rows)  # DDL commits by itself in MySQL: done before the rows' changes
                self._replace(conn, schema, rows)
                conn.commit()
            except BaseException:
                if conn.open:
                    conn.rollback()
                raise
            finally:
                if self._locked:
                    self._locked = False
                    self._execute("DO RELEASE_LOCK(%s)", (self._lock_name,))
        except pymysql.Error as exc:
            if transient(exc):
                self.close()
                raise SinkUnavailable(f"{self.name}: {_first_line(exc)}") from exc
            raise

    def _replace(self, conn: pymysql.connections.Connection[Any], schema: Schema, rows: Rows) -> None:
        table = self.qtable.replace("%", "%%")
        with conn.cursor() as cur:
            urls = ", ".join(["UNHEX(SHA2(%s, 256))"] * len(rows.urls))
            cur.execute(f"DELETE FROM {table} WHERE crawl = %s AND {URL_KEY} IN ({urls})", [self.crawl_id, *rows.urls])
            if not rows.rows:
                return
            names, cells = schema.cells(rows.rows, _json_cell)
            _finite(cells, [i for i, n in enumerate(names) if schema.columns[n] is Kind.DOUBLE])
            columns = ", ".join(_q(n) for n in names)
            marks = ", ".join(["%s"] * len(names))
            sets = ", ".join(f"{_q(n)} = VALUES({_q(n)})" for n in names if n not in self.keys)
            insert = f"INSERT INTO {table} ({columns}) VALUES ({marks}) ON DUPLICATE KEY UPDATE {sets}"
            self._check_size(cur, len(insert), rows.rows, cells)
            cur.executemany(insert, cells)

    def _check_size(self, cur: Any, statement: int, rows: list[dict[str, Any]], cells: list[list[Any]]) -> None:
        """ConfigError for a row larger than the server's max_allowed_packet: the server drops the connection on it,
        which looks like an outage, and the crawl would wait for it forever."""
        if not self._packet:
            cur.execute("SELECT @@max_allowed_packet")
            self._packet = int(cur.fetchone()[0])
        for row, cells_of_row in zip(rows, cells, strict=True):
            chars = sum(len(c) for c in cells_of_row if isinstance(c, str))
            # UTF-8: 4 bytes a character at most, escaped or not
            if statement + 4 * chars + 24 * len(cells_of_row) < self._packet:
                continue
            # as sent: escaped by the connection (a quote, backslash or newline is two bytes) and quoted
            size = statement + sum(
                len(cur.connection.escape(c).encode()) if isinstance(c, str) else 24 for c in cells_of_row
            )
            if size > self._packet:
                raise ConfigError(
                    f"{self.name}: the row {row['url']} #{row.get('idx', 0)} is {size} bytes, over the server's"
                    f" max_allowed_packet ({self._packet}): raise it (SET GLOBAL max_allowed_packet), then resume"
                )

    @staticmethod
    def _takes_name(name: str) -> bool:
        """MySQL and MariaDB names hold the Basic Multilingual Plane only (no emoji)."""
        return all(c <= "\uffff" for c in name)

    def _add_column(self, name: str, kind: Kind) -> bool:
        try:
            self._execute(self._add_column_sql(name, kind))
        except pymysql.err.OperationalError as exc:
            if exc.args and exc.args[0] in _TOO_WIDE:
                self._why_full = _first_line(exc)
                return False
            raise
        return True

    @property
    def _lock_name(self) -> str:
        return f"webtrawl table {self._params['database']}.{self.table}"[:64]

    def _lock_ddl(self) -> None:
        if not self._locked:
            self._execute("DO GET_LOCK(%s, 120)", (self._lock_name,))
            self._locked = True

    def _create_sql(self, schema: Schema, need: Mapping[str, Kind]) -> str:
        defs = ["crawl varchar(255) NOT NULL", "url mediumtext NOT NULL"]
        for name, kind in {**schema.columns, **need}.items():
            if name not in ("crawl", "url"):
                defs.append(f"{quote(name)} {self.types[kind]}" + (" NOT NULL" if name in self.keys else ""))
        defs.append(f"{URL_KEY} binary(32) GENERATED ALWAYS AS (UNHEX(SHA2(url, 256))) STORED")
        key = ", ".join(URL_KEY if k == "url" else quote(k) for k in self.keys)
        return (
            f"CREATE TABLE IF NOT EXISTS {self.qtable} ({', '.join(defs)}, UNIQUE KEY webtrawl_key ({key}))"
            " ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        )

    def _columns(self) -> dict[str, str] | None:
        schema, table = split_table(self.table)
        with self._db().cursor() as cur:
            cur.execute(
                "SELECT COLUMN_NAME, DATA_TYPE, EXTRA FROM information_schema.COLUMNS WHERE"
                " TABLE_SCHEMA = COALESCE(%s, DATABASE()) AND TABLE_NAME = %s ORDER BY ORDINAL_POSITION",
                (schema or None, table),
            )
            found = cur.fetchall()
        self._db().commit()  # end the read's snapshot: the next statements must see other nodes' columns
        columns = {str(n): _BACK.get(str(t).lower(), str(t)) for n, t, extra in found if "GENERATED" not in str(extra)}
        if found and URL_KEY not in {str(n) for n, _, _ in found}:
            raise self.not_ours(f"no column {URL_KEY!r}")  # every write's DELETE and key would fail
        return columns or None

    def _execute(self, statement: str, params: Sequence[Any] = ()) -> None:
        with self._db().cursor() as cur:
            cur.execute(statement, tuple(params) if params else None)


def open_mysql(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    return MysqlSink(spec.target, spec.table, What(stream), ctx.crawl_id, spec.name)
