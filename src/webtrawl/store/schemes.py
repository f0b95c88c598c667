"""The built-in sinks, one row each: a URL scheme and the factory that builds it (imported when first used, in the
process that writes). The streams each holds and the form of its URL are a shared format, read when the config is
(:data:`webtrawl.formats.sinkurl.KINDS`): adding a built-in is one row here and one there. A user's sink needs no row
at all (``--items-to package.module:Class?k=v``, see :mod:`webtrawl.store.registry`).
"""

from __future__ import annotations

import msgspec


class Builtin(msgspec.Struct, frozen=True):
    factory: str  # "module:function" taking (SinkUrl, stream, SinkContext), returning a Sink
    seal_dir: str = ""  # "module:function" (directory, prefix) sealing the .open files a killed writer left


BUILTIN: dict[str, Builtin] = {
    "warc": Builtin("webtrawl.store.files:open_warc"),
    "jsonl": Builtin("webtrawl.store.files:open_jsonl"),
    "csv": Builtin("webtrawl.store.sinks.csvsink:open_csv", seal_dir="webtrawl.store.sinks.csvsink:seal_csv_dir"),
    "parquet": Builtin(
        "webtrawl.store.sinks.parquet:open_parquet", seal_dir="webtrawl.store.sinks.parquet:seal_parquet_dir"
    ),
    "sqlite": Builtin("webtrawl.store.sinks.sqlite:open_sqlite"),
    "postgresql": Builtin("webtrawl.store.sinks.postgres:open_postgres"),
    "mysql": Builtin("webtrawl.store.sinks.mysql:open_mysql"),
    "nats": Builtin("webtrawl.store.sinks.natssink:open_nats"),
    "amqp": Builtin("webtrawl.store.sinks.amqpsink:open_amqp"),
    "amqps": Builtin("webtrawl.store.sinks.amqpsink:open_amqp"),  # TLS: the URL keeps its scheme
    "json": Builtin("webtrawl.store.sinks.jsonsink:open_json", seal_dir="webtrawl.store.sinks.jsonsink:rebuild_left"),
}
