"""Sink URLs: ``csv:DIR``, ``parquet:DIR``, ``sqlite:///PATH``, ``postgresql://...``, ``mysql://...``,
``nats://...``, ``amqp://...``, ``json:FILE`` (and ``jsonl:DIR``).

Each scheme has a factory that builds the sink inside the process that writes; the crawl's parsers find them in
:mod:`webtrawl.store.registry` (``register_sink``), ``trawl export`` here (:func:`open_sink`, where ``jsonl:DIR``
writes flat rows). Another destination is one small module with a class that has ``name``, ``write``, ``flush`` and
``close`` (the :class:`~webtrawl.store.base.Sink` protocol) and one ``register_sink`` call: a MongoDB sink, say, would
``delete_many({"crawl": c, "url": {"$in": urls}})`` and ``insert_many`` the rows in one transaction.

SQLite URLs follow SQLAlchemy: ``sqlite:///relative.db``, ``sqlite:////absolute/path.db``. Table sinks take
``?table=NAME`` (default ``items`` for items, ``pages`` for page records). File and SQLite paths are made absolute
when the crawl starts (:func:`normalize`), so a resume from another directory writes to the same place.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path

import msgspec

from webtrawl.errors import ConfigError, StateError
from webtrawl.store.base import Sink, SinkContext
from webtrawl.store.sinks.rows import What

_USERINFO_RE = re.compile(r"^([a-z][a-z0-9+.-]*://)([^:@/]*):[^@/]*@", re.IGNORECASE)
_QUERY_SECRET_RE = re.compile(r"([?&](?:password|passwd|pass|secret|token)=)[^&#]*", re.IGNORECASE)


class SinkUrl(msgspec.Struct, frozen=True):
    scheme: str  # jsonl, csv, parquet, sqlite, postgresql
    target: str  # a directory, a file path, or a libpq connection URI without ``table``
    table: str | None = None
    name: str = ""  # the URL with secrets masked, for messages


Factory = Callable[[SinkUrl, What, SinkContext], Sink]
_FACTORIES: dict[str, Factory] = {}
ALIASES = {
    "postgres": "postgresql",
    "postgresql+psycopg": "postgresql",
    "sqlite3": "sqlite",
    "mariadb": "mysql",
    "mysql+pymysql": "mysql",
    "amqps": "amqp",
}
_SERVERS = {"nats", "amqp"}  # URLs their sinks read themselves (options, credentials)


def register(scheme: str, factory: Factory) -> None:
    """Make ``scheme:...`` URLs build sinks with ``factory`` here (``trawl export``)."""
    _FACTORIES[scheme] = factory


def _known() -> set[str]:
    from webtrawl.store.registry import known_schemes

    return (set(_FACTORIES) | set(known_schemes())) - {"warc"}  # WARC holds exchanges, not rows


def mask(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@``, ``?password=``) masked; the user name stays (it is in the
    server's own messages anyway, and tells which login failed)."""
    return _QUERY_SECRET_RE.sub(r"\1***", _USERINFO_RE.sub(r"\1\2:***@", url, count=1))


def parse(url: str) -> SinkUrl:
    """Split a sink URL; ConfigError (one line, secrets masked) if it names nothing we can write to."""
    name = mask(url)
    scheme, sep, rest = url.partition(":")
    scheme = ALIASES.get(scheme.lower(), scheme.lower())
    if not sep or scheme not in _known():
        known = ", ".join(sorted(_known()))
        raise ConfigError(f"sink {name!r}: unknown kind (use one of {known}, e.g. csv:DIR or sqlite:///items.db)")
    if scheme not in _FACTORIES:  # a scheme registered elsewhere: its factory reads the URL
        return SinkUrl(scheme, rest, None, name)
    if scheme in _SERVERS:
        return SinkUrl(scheme, url, None, name)
    if scheme in ("postgresql", "mysql"):
        parts = urllib.parse.urlsplit(scheme + ":" + rest)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        table = next((v for k, v in query if k == "table"), None)
        kept = urllib.parse.urlencode([(k, v) for k, v in query if k != "table"])
        target = urllib.parse.urlunsplit(parts._replace(query=kept))
        return SinkUrl(scheme, target, _table(table, name), name)
    path, _, query_text = rest.partition("?")
    query = urllib.parse.parse_qsl(query_text, keep_blank_values=True)
    table = next((v for k, v in query if k == "table"), None)
    if scheme == "sqlite":
        if not path.startswith("///") or len(path) == 3:
            raise ConfigError(f"sink {name!r}: write sqlite:///relative.db or sqlite:////absolute/path.db")
        return SinkUrl(scheme, urllib.parse.unquote(path[3:]), _table(table, name), name)
    if query:
        raise ConfigError(f"sink {name!r}: a {scheme} sink takes no ?options")
    path = path[2:] if path.startswith("//") else path
    if not path:
        example = "a file (json:FILE)" if scheme == "json" else f"a directory ({scheme}:DIR)"
        raise ConfigError(f"sink {name!r}: name {example}")
    return SinkUrl(scheme, path, None, name)


def _table(table: str | None, name: str) -> str | None:
    if table is not None and (not table.strip() or "\x00" in table):
        raise ConfigError(f"sink {name!r}: empty table name")
    return table


def normalize(url: str) -> str:
    """The same sink with file paths made absolute (checked with :func:`parse` first)."""
    spec = parse(url)
    if spec.scheme not in _FILE_SCHEMES:
        return url
    path = Path(spec.target).expanduser().absolute()
    if spec.scheme == "sqlite":
        query = url.partition("?")[2]
        return f"sqlite:///{path}" + (f"?{query}" if query else "")
    return f"{spec.scheme}:{path}"


_FILE_SCHEMES = {"jsonl", "csv", "parquet", "sqlite", "json"}


def open_sink(url: str, what: What | str, ctx: SinkContext) -> Sink:
    spec = parse(url)
    return _FACTORIES[spec.scheme](spec, What(what), ctx)


def crawl_id(prefix: str, meta: Mapping[str, str | int]) -> str:
    """The id of a crawl, the same on every node: its frontier key prefix and the Redis time it was created."""
    created = meta.get("created")
    if not created:
        raise StateError("the crawl's frontier has no creation time (meta 'created'): cannot name its rows")
    return f"{prefix}-{created}"
