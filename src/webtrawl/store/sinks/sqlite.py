"""``sqlite:///PATH``: items or page records in a SQLite file (WAL, one transaction per batch).

Several parser processes write one file: each batch takes the write lock (``BEGIN IMMEDIATE``, waiting up to
``busy_timeout``), so batches never interleave. ``synchronous=NORMAL`` in WAL mode: a committed batch survives a kill
of any process (the same promise as the JSONL files, which are not fsynced per line either); only a power cut can
take back the last commits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from webtrawl.errors import ConfigError, SinkUnavailable
from webtrawl.formats.sinkurl import SinkUrl
from webtrawl.store.base import Sink, SinkContext
from webtrawl.store.sinks.rows import Rows, What
from webtrawl.store.sinks.schema import Kind
from webtrawl.store.sinks.sqltable import SqlSink, quote

_BUSY_MS = 60_000
# Codes that mean "not now" (another writer holds the lock too long, disk full, I/O error), not "never".
_TRANSIENT = {
    sqlite3.SQLITE_BUSY,
    sqlite3.SQLITE_LOCKED,
    sqlite3.SQLITE_FULL,
    sqlite3.SQLITE_IOERR,
    sqlite3.SQLITE_CANTOPEN,
}


def _transient(exc: sqlite3.Error) -> bool:
    """'Not now' (locked, full, I/O), as opposed to 'never' (not SQLite, a bad table)."""
    return getattr(exc, "sqlite_errorcode", None) in _TRANSIENT or "locked" in str(exc)


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating the file and its directory) in WAL mode; a file that is not SQLite is a ConfigError, a file
    another writer holds locked is SinkUnavailable (switching to WAL takes the lock and gets no busy wait, so two
    writers opening a new file at once can meet it; a file already in WAL mode is not switched again)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=_BUSY_MS / 1000, isolation_level=None, check_same_thread=False)
        if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as exc:
        if _transient(exc):
            raise SinkUnavailable(f"sqlite:///{path}: {exc}") from exc
        raise ConfigError(f"sqlite:///{path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"sqlite:///{path}: {exc.strerror or exc}") from None
    return conn


class SqliteSink(SqlSink):
    types = {
        Kind.TEXT: "TEXT",
        Kind.BIGINT: "BIGINT",
        Kind.DOUBLE: "REAL",
        Kind.BOOLEAN: "BOOLEAN",
        Kind.JSON: "JSON",  # numeric affinity: JSON text stays text, a bare number is stored as one (as a float
        # beyond 64 bits: such an integer goes to _extra, see Schema.cells)
    }

    def __init__(self, path: Path, table: str | None, what: What, crawl_id: str, name: str) -> None:
        super().__init__(name, table, what, crawl_id)
        self.qtable = quote(self.table)  # a dot is part of the name here, not a schema
        self.path = path
        self._conn: sqlite3.Connection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def probe(self) -> None:
        """At start: open the file and check the table (if it exists) is one of ours. ConfigError if not."""
        try:
            self._load()
        except sqlite3.Error as exc:
            raise ConfigError(f"{self.name}: {exc}") from None
        except SinkUnavailable as exc:  # locked for now: at start that is one line, as any other open failure
            raise ConfigError(str(exc)) from None

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = connect(self.path)
        return self._conn

    def _transaction(self, rows: Rows) -> None:
        try:
            conn = self._db()
            conn.execute("BEGIN IMMEDIATE")
            try:
                schema = self._grow(rows.rows)
                crawl = self.crawl_id
                conn.executemany(
                    f"DELETE FROM {self.qtable} WHERE crawl = ? AND url = ?", [(crawl, url) for url in rows.urls]
                )
                if rows.rows:
                    names, cells = schema.cells(rows.rows, wide_ints=False)
                    marks = ", ".join("?" * len(names))
                    columns = ", ".join(quote(n) for n in names)
                    insert = f"INSERT INTO {self.qtable} ({columns}) VALUES ({marks})" + self._upsert_tail(names)
                    conn.executemany(insert, cells)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            if _transient(exc):
                self.close()
                raise SinkUnavailable(f"{self.name}: {exc}") from exc
            raise

    def _add_column(self, name: str, kind: Kind) -> bool:
        try:
            self._execute(self._add_column_sql(name, kind))
        except sqlite3.OperationalError as exc:
            if "too many columns" not in str(exc):  # SQLITE_MAX_COLUMN, 2000 unless built otherwise
                raise
            self._why_full = str(exc)
            return False
        return True

    def _columns(self) -> dict[str, str] | None:
        found = self._db().execute(f"PRAGMA table_info({quote(self.table)})").fetchall()
        return {row[1]: str(row[2]) for row in found} if found else None

    def _execute(self, statement: str, params: Sequence[Any] = ()) -> None:
        self._db().execute(statement, params)


def open_sqlite(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    return SqliteSink(Path(spec.target), spec.table, What(stream), ctx.crawl_id, spec.name)
