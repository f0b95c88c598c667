"""Sink URLs: a built-in scheme (``csv:DIR``, ``json:FILE``, ``sqlite:///PATH``, ``postgresql://...``,
``mysql://...``, ``nats://...``, ``amqp://...``) or a user's class by import path
(``package.module:Class?key=value&...``).

A shared format: the option readers check and normalize sink URLs when the config is read (:mod:`webtrawl.values`,
which loads no stage), the store opens them. So the built-in kinds' URL forms and streams are here
(:data:`KINDS`); the code that builds each kind is the store's (:mod:`webtrawl.store.schemes`, one row per kind
here).

SQLite URLs follow SQLAlchemy: ``sqlite:///relative.db``, ``sqlite:////absolute/path.db``. Table sinks take
``?table=NAME`` (default ``items`` for items, ``pages`` for page records). File and SQLite paths are made absolute
when the crawl starts (:func:`normalize`), so a resume from another directory writes to the same place. A user's
class gets the query's ``key=value`` pairs as keyword arguments (strings).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping
from pathlib import Path

import msgspec

from webtrawl.errors import ConfigError, StateError
from webtrawl.importpath import is_import_path
from webtrawl.redact import mask_password

USER = ""  # the scheme of a user's sink class (its target is "module:Class")
ROWS = ("records", "items")  # the streams of keyed rows (every sink beside the crawl's own files takes these)


class SinkKind(msgspec.Struct, frozen=True):
    streams: tuple[str, ...] = ROWS
    # How the URL reads: "dir" (scheme:DIR, no ?options), "path" (scheme:FILE, no ?options), "file"
    # (scheme:///relative or ////absolute, ?table=), "url" (a server URL whose ?table= is ours and the rest is the
    # driver's or the sink's).
    form: str = "dir"


KINDS: dict[str, SinkKind] = {
    "warc": SinkKind(("warc",)),
    "jsonl": SinkKind((*ROWS, "dropped", "chunks", "changes")),
    "csv": SinkKind(),
    "parquet": SinkKind(),
    "sqlite": SinkKind(form="file"),
    "postgresql": SinkKind(form="url"),
    "mysql": SinkKind(form="url"),
    "nats": SinkKind(form="url"),
    "amqp": SinkKind(form="url"),
    "amqps": SinkKind(form="url"),
    "json": SinkKind(form="path"),
}
ALIASES = {
    "postgres": "postgresql",
    "postgresql+psycopg": "postgresql",
    "sqlite3": "sqlite",
    "mariadb": "mysql",
    "mysql+pymysql": "mysql",
}


class SinkUrl(msgspec.Struct, frozen=True):
    scheme: str  # a key of KINDS, or USER
    target: str  # a directory, a file path, a server URL without ``table``, or "module:Class"
    table: str | None = None
    name: str = ""  # the URL with secrets masked, for messages
    options: tuple[tuple[str, str], ...] = ()  # a user's class: the query's key=value pairs


def mask(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@``, ``?password=``, a NATS token) masked; the user name stays
    (it is in the server's own messages anyway, and tells which login failed)."""
    return mask_password(url)


def _known() -> str:
    rows = sorted(scheme for scheme, kind in KINDS.items() if set(kind.streams) & set(ROWS))
    return ", ".join([*rows, "package.module:Class"])


def parse(url: str) -> SinkUrl:
    """Split a sink URL; ConfigError (one line, secrets masked) if it names nothing we can write to. A directory
    left out (``jsonl:``) stands for the crawl's own directory of the stream (see :func:`normalize`)."""
    name = mask(url)
    scheme, sep, rest = url.partition(":")
    scheme = ALIASES.get(scheme.lower(), scheme.lower())
    row = KINDS.get(scheme) if sep else None
    if row is None:
        head, _, query_text = url.partition("?")
        if is_import_path(head):
            options = urllib.parse.parse_qsl(query_text, keep_blank_values=True)
            return SinkUrl(USER, head, None, name, tuple(options))
        raise ConfigError(f"sink {name!r}: unknown kind (use one of {_known()}, e.g. csv:DIR or sqlite:///items.db)")
    if row.form == "url":
        parts = urllib.parse.urlsplit(f"{scheme}:{rest}")
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        kept = urllib.parse.urlencode([(k, v) for k, v in query if k != "table"])
        # as given but for ?table= (urlunsplit would make libpq's postgresql:///DB?host=/socket/dir postgresql:/DB)
        base = f"{scheme}:{rest}".partition("#")[0].partition("?")[0]
        target = base + (f"?{kept}" if kept else "") + (f"#{parts.fragment}" if parts.fragment else "")
        return SinkUrl(scheme, target, _table(query, name), name)
    path, _, query_text = rest.partition("?")
    query = urllib.parse.parse_qsl(query_text, keep_blank_values=True)
    if row.form == "file":
        if not path.startswith("///") or len(path) == 3:
            raise ConfigError(f"sink {name!r}: write {scheme}:///relative.db or {scheme}:////absolute/path.db")
        unknown = next((k for k, _ in query if k != "table"), None)
        if unknown is not None:  # a misspelt table= would send the rows to the default table
            raise ConfigError(f"sink {name!r}: unknown option {unknown!r} (use table)")
        return SinkUrl(scheme, urllib.parse.unquote(path[3:]), _table(query, name), name)
    if query:
        raise ConfigError(f"sink {name!r}: a {scheme} sink takes no ?options")
    return SinkUrl(scheme, path[2:] if path.startswith("//") else path, None, name)


def _table(query: list[tuple[str, str]], name: str) -> str | None:
    """The query's ``table=``: given twice, the rows went to the first in silence."""
    tables = [value for key, value in query if key == "table"]
    if len(tables) > 1:
        raise ConfigError(f"sink {name!r}: table given {len(tables)} times (one sink writes one table)")
    table = tables[0] if tables else None
    if table is not None and (not table.strip() or "\x00" in table):
        raise ConfigError(f"sink {name!r}: empty table name")
    return table


def normalize(url: str) -> str:
    """A sink URL a user gave (``--items-to``, ``--records-to``, ``trawl export --to``), checked, with file paths
    made absolute."""
    spec = parse(url)
    row = KINDS.get(spec.scheme)
    if row is None:  # a user's class
        return url
    if not set(row.streams) & set(ROWS):
        raise ConfigError(f"sink {spec.name!r}: {spec.scheme} holds only {', '.join(row.streams)}, not rows")
    if row.form == "url":
        return url
    if not spec.target:
        example = f"a file ({spec.scheme}:FILE)" if row.form == "path" else f"a directory ({spec.scheme}:DIR)"
        raise ConfigError(f"sink {spec.name!r}: name {example}")
    path = Path(spec.target).expanduser().absolute()
    if row.form == "file":
        query = url.partition("?")[2]
        return f"{spec.scheme}:///{path}" + (f"?{query}" if query else "")
    return f"{spec.scheme}:{path}"


def crawl_id(prefix: str, meta: Mapping[str, str | int]) -> str:
    """The id of a crawl, the same on every node: its frontier key prefix and the Redis time it was created."""
    created = meta.get("created")
    if not created:
        raise StateError("the crawl's frontier has no creation time (meta 'created'): cannot name its rows")
    return f"{prefix}-{created}"
