"""The built-in sinks, one row each: a URL scheme, the factory that builds it (imported when first used, in the
process that writes), the streams it can hold and the form of its URL. Adding a built-in is one row here; a user's
sink needs no row at all (``--items-to package.module:Class?k=v``, see :mod:`webtrawl.store.registry`).
"""

from __future__ import annotations

import msgspec

ROWS = ("records", "items")  # the streams of keyed rows (every sink beside the crawl's own files takes these)


class Builtin(msgspec.Struct, frozen=True):
    factory: str  # "module:function" taking (SinkUrl, stream, SinkContext), returning a Sink
    streams: tuple[str, ...] = ROWS
    # How the URL reads: "dir" (scheme:DIR, no ?options), "path" (scheme:FILE, no ?options), "file"
    # (scheme:///relative or ////absolute, ?table=), "url" (a server URL whose ?table= is ours and the rest is the
    # driver's or the sink's).
    form: str = "dir"
    seal_dir: str = ""  # "module:function" (directory, prefix) sealing the .open files a killed writer left


BUILTIN: dict[str, Builtin] = {
    "warc": Builtin("webtrawl.store.files:open_warc", ("warc",)),
    "jsonl": Builtin("webtrawl.store.files:open_jsonl", (*ROWS, "dropped", "chunks", "changes")),
    "csv": Builtin("webtrawl.store.sinks.csvsink:open_csv", seal_dir="webtrawl.store.sinks.csvsink:seal_csv_dir"),
    "parquet": Builtin(
        "webtrawl.store.sinks.parquet:open_parquet", seal_dir="webtrawl.store.sinks.parquet:seal_parquet_dir"
    ),
    "sqlite": Builtin("webtrawl.store.sinks.sqlite:open_sqlite", form="file"),
    "postgresql": Builtin("webtrawl.store.sinks.postgres:open_postgres", form="url"),
    "mysql": Builtin("webtrawl.store.sinks.mysql:open_mysql", form="url"),
    "nats": Builtin("webtrawl.store.sinks.natssink:open_nats", form="url"),
    "amqp": Builtin("webtrawl.store.sinks.amqpsink:open_amqp", form="url"),
    "amqps": Builtin("webtrawl.store.sinks.amqpsink:open_amqp", form="url"),  # TLS: the URL keeps its scheme
    "json": Builtin(
        "webtrawl.store.sinks.jsonsink:open_json", form="path", seal_dir="webtrawl.store.sinks.jsonsink:rebuild_left"
    ),
}
ALIASES = {
    "postgres": "postgresql",
    "postgresql+psycopg": "postgresql",
    "sqlite3": "sqlite",
    "mariadb": "mysql",
    "mysql+pymysql": "mysql",
}
