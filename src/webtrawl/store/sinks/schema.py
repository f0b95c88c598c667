"""Columns of a table sink, grown from the rows it is given; and the rule for a value that no longer fits.

A column is created the first time a field has a non-null value, typed by that value: ``bool`` -> boolean,
``int`` (64-bit) -> bigint, ``float`` -> double, ``str`` -> text, anything else (lists, objects, huge ints) -> JSON.
A null is the same as a missing field, so a column is never typed by a null. Columns are only ever added, never
dropped or retyped (an ALTER TYPE rewrites a table and races with other nodes). A field whose name differs from a
column's only by case (``Price`` beside ``price``: one column to SQLite and to most tools) is not given a column.

A value that does not fit its column later is never refused and never lost: an ``int`` goes into a double column as
a float (if exact); anything goes into a text column (non-strings as their JSON text); any value into a JSON column;
otherwise (say ``"n/a"`` for a bigint ``price``) the typed cell stays null and the value goes into the row's
``_extra`` JSON object under the field's name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any

import msgspec

EXTRA = "_extra"
URL_KEY = "_url_sha256"  # the key's URL part in MariaDB and PostgreSQL: a whole URL is too long for an index
_INT64 = (-(2**63), 2**63 - 1)
_MAX_NAME = 63  # PostgreSQL's identifier limit; the other sinks share it so every sink names a field the same
_JSON = msgspec.json.Encoder(order="deterministic")


class Kind(StrEnum):
    TEXT = "text"
    BIGINT = "bigint"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    JSON = "json"


def kind_of(value: Any) -> Kind | None:
    """The column kind a first non-null value asks for; ``None`` for a null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return Kind.BOOLEAN
    if isinstance(value, int):
        return Kind.BIGINT if _INT64[0] <= value <= _INT64[1] else Kind.JSON
    if isinstance(value, float):
        return Kind.DOUBLE
    if isinstance(value, str):
        return Kind.TEXT
    return Kind.JSON


def json_text(value: Any) -> str:
    """A value as JSON text (sorted keys, so the same item always gives the same bytes)."""
    try:
        return _JSON.encode(value).decode()
    except (TypeError, OverflowError):  # not JSON-able (bytes, a huge int): its text is still data
        return _JSON.encode(str(value)).decode()


_MISFIT = object()


def _coerce(value: Any, kind: Kind) -> Any:
    """``value`` as the column's kind wants it, or ``_MISFIT``. JSON cells are JSON text."""
    if kind is Kind.TEXT:
        return value if isinstance(value, str) else json_text(value)
    if kind is Kind.JSON:
        return json_text(value)
    if kind is Kind.BOOLEAN:
        return value if isinstance(value, bool) else _MISFIT
    if isinstance(value, bool):
        return _MISFIT
    if kind is Kind.BIGINT:
        return value if isinstance(value, int) and _INT64[0] <= value <= _INT64[1] else _MISFIT
    if isinstance(value, float):
        return value
    if isinstance(value, int) and abs(value) <= 2**53:
        return float(value)
    return _MISFIT


def column_name(field: str, reserved: Iterable[str]) -> str:
    """The column of a user field: a reserved name (a key column, ``_extra``, ``_url_sha256``) gets a trailing
    ``_``, and so does one that is a reserved name and underscores (``url_`` -> ``url__``: apart from the field
    ``url``, in ``url_``); so do an empty name and one ending in a space (``""`` -> ``_``, ``"kg "`` -> ``"kg _"``);
    names longer than 63 bytes are cut and end in a short hash so two long names stay apart. A NUL, which no
    database takes in a name, is U+FFFD (as in PostgreSQL's text cells)."""
    field = field.replace("\x00", "\ufffd")
    base = field.rstrip("_") if field.endswith("_") else field
    odd = not base or base.endswith(" ")  # MariaDB refuses a column name that is empty or ends in a space
    name = field + "_" if odd or base in reserved or base in (EXTRA, URL_KEY) else field
    if len(name.encode()) > _MAX_NAME:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = name.encode()[: _MAX_NAME - 9].decode(errors="ignore") + "_" + digest
    return name


class Schema:
    """The columns of one table (ordered: keys first, then in the order fields were first seen)."""

    def __init__(self, keys: Mapping[str, Kind], columns: Mapping[str, Kind] | None = None) -> None:
        self.keys = tuple(keys)
        self.columns: dict[str, Kind] = {**keys, **(columns or {}), EXTRA: Kind.JSON}
        self._folded = {name.casefold() for name in self.columns}

    def missing(self, rows: Iterable[Mapping[str, Any]], takes: Callable[[str], bool] | None = None) -> dict[str, Kind]:
        """Columns the rows need that the table lacks, typed by their first non-null value (a name the database
        cannot hold, ``takes`` false, stays in ``_extra``)."""
        takes = takes or (lambda _: True)
        new: dict[str, Kind] = {}
        columns = self.columns
        folded = set(self._folded)
        for row in rows:
            for name, value in row.items():
                if name in columns or name in new:
                    continue
                kind = kind_of(value)
                if kind is not None and name.casefold() not in folded and takes(name):  # a case twin stays in _extra
                    new[name] = kind
                    folded.add(name.casefold())
        return new

    def add(self, columns: Mapping[str, Kind]) -> None:
        for name, kind in columns.items():
            if name not in self.columns:
                self.columns[name] = kind
                self._folded.add(name.casefold())

    def cells(
        self, rows: Sequence[Mapping[str, Any]], json_cell: Callable[[str], Any] = str, wide_ints: bool = True
    ) -> tuple[list[str], list[list[Any]]]:
        """(column names, one list of cells per row) with every value coerced to its column or moved to ``_extra``.

        ``json_cell`` turns the JSON text of a JSON cell into what the sink's driver wants; ``wide_ints`` false: an
        integer beyond 64 bits is no JSON cell of its own (SQLite stores such a number as a float) but in ``_extra``.
        """
        names = list(self.columns)
        exact = {Kind.TEXT: str, Kind.DOUBLE: float, Kind.BOOLEAN: bool}  # a value of this very type fits as is
        plan = [(i, name, self.columns[name], exact.get(self.columns[name])) for i, name in enumerate(names)]
        extra_at = names.index(EXTRA)
        known = self.columns.keys()
        lo, hi = _INT64
        out = []
        for row in rows:
            cells: list[Any] = [None] * len(names)
            extra: dict[str, Any] = {}
            for i, name, kind, fits in plan:
                value = row.get(name)
                if value is None:
                    continue
                if type(value) is fits or (kind is Kind.BIGINT and type(value) is int and lo <= value <= hi):
                    cells[i] = value
                    continue
                cell = _coerce(value, kind)
                wide = not wide_ints and kind is Kind.JSON and type(value) is int and not lo <= value <= hi
                if cell is _MISFIT or wide:
                    extra[name] = value
                else:
                    cells[i] = json_cell(cell) if kind is Kind.JSON else cell
            if not row.keys() <= known:
                for name in row.keys() - known:  # a null-only field has no column: nothing else to keep
                    if row[name] is not None:
                        extra[name] = row[name]
            if extra:
                cells[extra_at] = json_cell(json_text(extra))
            out.append(cells)
        return names, out
