"""What the SQL sinks share: one transaction per batch that grows the table, replaces the batch's URLs and commits.

Per batch, in one transaction: create the table or add the columns the rows need (never drop or retype one), delete
the rows of the batch's URLs in this crawl, insert the new rows (upsert on the key, for two nodes writing one URL at
once), commit. A kill before the commit leaves the table as it was; after it the URL's rows are exactly those of its
last extraction, whatever happened to earlier fetches of it. The dialects (SQLite, PostgreSQL) only say how.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from webtrawl.errors import ConfigError
from webtrawl.store.base import PageOutput
from webtrawl.store.sinks.rows import DEFAULT_TABLE, RowMaker, Rows, What, keys_of
from webtrawl.store.sinks.schema import EXTRA, Kind, Schema

log = logging.getLogger("webtrawl.store")


def quote(name: str) -> str:
    """An SQL identifier, quoted (the same rule in SQLite and PostgreSQL)."""
    return '"' + name.replace('"', '""') + '"'


def split_table(name: str) -> tuple[str, str]:
    """``schema.table`` -> (schema, table), ``table`` -> ("", table): the first dot splits, so ``db.a.b`` is table
    ``a.b`` in ``db`` wherever the name is read (creating, quoting, reading the columns back)."""
    schema, dot, table = name.partition(".")
    return (schema, table) if dot else ("", name)


def quote_table(name: str) -> str:
    """``schema.table`` or ``table``, each part quoted."""
    schema, table = split_table(name)
    return f"{quote(schema)}.{quote(table)}" if "." in name else quote(table)


class SqlSink(ABC):
    """A table sink: subclasses open the connection and speak their dialect; this class keeps the protocol."""

    types: Mapping[Kind, str]  # column kind -> SQL type

    def __init__(self, name: str, table: str | None, what: What, crawl_id: str) -> None:
        self.name = name
        self.what = what
        self.table = table or DEFAULT_TABLE[what]
        self.qtable = quote_table(self.table)
        self.keys = keys_of(what)
        self.rows = RowMaker(what, crawl_id)
        self.crawl_id = crawl_id
        self.schema: Schema | None = None  # None: read it from the database at the next write
        self.full = False  # the table took no more columns: new fields go to _extra

    # --- the Sink protocol -------------------------------------------------------------------------------------
    def write(self, batch: Sequence[PageOutput]) -> None:
        """The batch's rows are committed when this returns (nothing is buffered in this process)."""
        self.write_rows(self.rows(batch))

    def write_rows(self, rows: Rows) -> None:
        if not rows.urls:
            return
        try:
            self._transaction(rows)
        except BaseException:
            self.schema = None  # another process may have changed the table; read it again next time
            raise

    def flush(self) -> None:  # noqa: B027 - nothing to do, on purpose
        """Every write already committed its own transaction."""

    @abstractmethod
    def close(self) -> None: ...

    # --- dialects -------------------------------------------------------------------------------------------------
    @abstractmethod
    def _transaction(self, rows: Rows) -> None: ...

    @abstractmethod
    def _columns(self) -> dict[str, str] | None:
        """The table's columns and SQL types as the database has them, None if there is no table."""

    @abstractmethod
    def _execute(self, statement: str, params: Sequence[Any] = ()) -> None: ...

    # --- shared steps, called inside the subclass's transaction ----------------------------------------------------
    def _grow(self, rows: Sequence[Mapping[str, Any]]) -> Schema:
        """The schema after creating the table or adding the columns ``rows`` need, inside the transaction."""
        schema = self.schema
        exists = True
        if schema is None:
            schema, exists = self._load()
        need = {} if self.full and exists else schema.missing(rows, self._takes_name)
        if need or not exists:
            self._lock_ddl()
            schema, exists = self._load()  # another process may have changed the table meanwhile
            need = schema.missing(rows, self._takes_name)
            if not exists:
                self._execute(self._create_sql(schema, need))
                log.info("%s: created table %s", self.name, self.table)
            elif need:
                added = []
                for column, kind in need.items():
                    if not self._add_column(column, kind):
                        self.full = True
                        log.warning(
                            "%s: table %s takes no more columns (%s): new fields go to its _extra column",
                            self.name,
                            self.table,
                            self._why_full,
                        )
                        break
                    added.append(column)
                if added:
                    log.info("%s: table %s: added columns %s", self.name, self.table, ", ".join(added))
            schema, exists = self._load()
        self.schema = schema
        return schema

    def _load(self) -> tuple[Schema, bool]:
        """The table's schema as the database has it, and whether the table exists."""
        existing = self._columns()
        if existing is None:
            return Schema(self.keys), False
        missing_keys = [k for k in self.keys if k not in existing]
        if missing_keys:
            raise self.not_ours(f"no column {missing_keys[0]!r}")
        back = {sql.lower(): kind for kind, sql in self.types.items()}
        columns = {name: back.get(sql.lower(), Kind.TEXT) for name, sql in existing.items() if name not in self.keys}
        columns.pop(EXTRA, None)
        return Schema(self.keys, columns), True

    def not_ours(self, lacks: str) -> ConfigError:
        """The error for a table of the same name that lacks what a webtrawl table has (``lacks``)."""
        return ConfigError(
            f"{self.name}: table {self.table} has {lacks}, so it is not a webtrawl {self.what.value} table"
            " (name another with ?table=NAME)"
        )

    def _lock_ddl(self) -> None:  # noqa: B027 - SQLite needs nothing
        """Serialise table changes between processes (SQLite's write lock already does)."""

    def _create_sql(self, schema: Schema, need: Mapping[str, Kind]) -> str:
        columns = {**schema.columns, **need}
        defs = []
        for name, kind in columns.items():
            not_null = " NOT NULL" if name in self.keys else ""
            defs.append(f"{quote(name)} {self.types[kind]}{not_null}")
        defs.extend(self._hidden_columns())
        return f"CREATE TABLE IF NOT EXISTS {self.qtable} ({', '.join(defs)}, PRIMARY KEY ({self._key()}))"

    def _hidden_columns(self) -> list[str]:
        """Definitions of columns the sink fills itself (no field's): none but in PostgreSQL."""
        return []

    def _key(self) -> str:
        """The key's columns, quoted: the primary key, and the conflict target of the upsert."""
        return ", ".join(quote(k) for k in self.keys)

    @staticmethod
    def _takes_name(name: str) -> bool:
        """Whether the database can name a column ``name`` (not: the field stays in ``_extra``)."""
        return True

    def _add_column_sql(self, name: str, kind: Kind) -> str:
        return f"ALTER TABLE {self.qtable} ADD COLUMN {quote(name)} {self.types[kind]}"

    _why_full = ""  # what a dialect's database said when it refused a column for the table's size

    def _add_column(self, name: str, kind: Kind) -> bool:
        """Add a column; False if the table is too wide for another (a dialect knows its database's limits)."""
        self._execute(self._add_column_sql(name, kind))
        return True

    def _upsert_tail(self, names: Sequence[str]) -> str:
        sets = ", ".join(f"{quote(n)} = excluded.{quote(n)}" for n in names if n not in self.keys)
        return f" ON CONFLICT ({self._key()}) DO UPDATE SET {sets}"
