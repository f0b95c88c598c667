"""Sinks for items and page records beyond the crawl's own files: JSONL, JSON, CSV, Parquet, SQLite, PostgreSQL,
MySQL/MariaDB, NATS JetStream, AMQP (RabbitMQ).

``open_sink(url, "items" | "records", ctx)`` builds one (inside the writing process); ``probe(url, what)`` checks at
start that it can be written (bad URL, wrong password, missing database: one ConfigError line, password masked).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from webtrawl.errors import ConfigError
from webtrawl.store.base import Sink, SinkContext
from webtrawl.store.registry import register_sink
from webtrawl.store.sinks.registry import ALIASES, SinkUrl, crawl_id, mask, normalize, open_sink, parse, register
from webtrawl.store.sinks.rows import Rows, What


def _sqlite(spec: SinkUrl, what: What, ctx: SinkContext) -> Sink:
    from webtrawl.store.sinks.sqlite import SqliteSink

    return SqliteSink(Path(spec.target), spec.table, what, ctx.crawl_id, spec.name)


def _postgresql(spec: SinkUrl, what: What, ctx: SinkContext) -> Sink:
    from webtrawl.store.sinks.postgres import PostgresSink

    return PostgresSink(spec.target, spec.table, what, ctx.crawl_id, spec.name)


def _csv(spec: SinkUrl, what: What, ctx: SinkContext) -> Sink:
    from webtrawl.store.sinks.csvsink import CsvSink

    return CsvSink(Path(spec.target), what, ctx, spec.name)


def _parquet(spec: SinkUrl, what: What, ctx: SinkContext) -> Sink:
    from webtrawl.store.sinks.parquet import ParquetSink

    return ParquetSink(Path(spec.target), what, ctx, spec.name)


def _jsonl(spec: SinkUrl, what: What, ctx: SinkContext) -> Sink:
    from webtrawl.store.sinks.jsonlsink import JsonlSink

    return JsonlSink(Path(spec.target), what, ctx, spec.name)


def _lazy(path: str) -> Callable[[SinkUrl, What, SinkContext], Sink]:
    """The factory ``module:function``, imported on first use (in the process that writes: its library too)."""

    def build(spec: SinkUrl, what: What, ctx: SinkContext) -> Sink:
        module, _, name = path.partition(":")
        sink: Sink = getattr(importlib.import_module(module), name)(spec, what, ctx)
        return sink

    return build


_FACTORIES = {
    "csv": _csv,
    "parquet": _parquet,
    "sqlite": _sqlite,
    "postgresql": _postgresql,
    "mysql": _lazy("webtrawl.store.sinks.mysql:open_mysql"),
    "nats": _lazy("webtrawl.store.sinks.natssink:open_nats"),
    "amqp": _lazy("webtrawl.store.sinks.amqpsink:open_amqp"),
    "json": _lazy("webtrawl.store.sinks.jsonsink:open_json"),
}
for _scheme, _factory in {**_FACTORIES, "jsonl": _jsonl}.items():
    register(_scheme, _factory)


def _crawl_factory(scheme: str) -> Callable[[str, str, SinkContext], Sink]:
    """The factory the parsers' registry calls: (url, stream, ctx); only the items and records streams."""

    def build(url: str, stream: str, ctx: SinkContext) -> Sink:
        if stream not in (What.ITEMS, What.RECORDS):
            raise ConfigError(f"{mask(url)}: takes items or records, not {stream}")
        return _FACTORIES[scheme](parse(url), What(stream), ctx)

    return build


for _alias, _scheme in {**{scheme: scheme for scheme in _FACTORIES}, **ALIASES}.items():
    register_sink(_alias, _crawl_factory(_scheme))


def seal_left_open(urls: list[str], node_id: str) -> None:
    """Seal the ``.open`` files this node's parsers left in the file sinks (a resume with fewer parsers would not
    reopen them), and rebuild JSON files from their journals; run before any parser starts. Other nodes' files in a
    shared directory are left alone."""
    from webtrawl.store.sinks.csvsink import seal_csv
    from webtrawl.store.sinks.files import seal_sink_dir
    from webtrawl.store.sinks.parquet import seal_parquet

    sealers = {"csv": (".csv", seal_csv), "parquet": (".parquet", seal_parquet)}
    for url in urls:
        spec = parse(url)
        if spec.scheme == "json":
            from webtrawl.store.sinks.jsonsink import rebuild_left

            rebuild_left(Path(spec.target), f"{node_id}-p")
        elif spec.scheme in sealers:
            ext, sealer = sealers[spec.scheme]
            seal_sink_dir(Path(spec.target), ext, sealer, prefix=f"{node_id}-p")


_SERVERS = {"postgresql", "sqlite", "mysql", "nats", "amqp"}  # sinks with a probe(): reach them, check the target


def probe(url: str, what: What | str) -> None:
    """Fail now, with one line, if the sink cannot be written: unreachable server, wrong password, missing
    database, a table that is not ours, a directory we cannot create, pyarrow not installed."""
    spec = parse(url)
    what = What(what)
    if spec.scheme in _SERVERS:
        sink: Any = _FACTORIES[spec.scheme](spec, what, SinkContext(Path("."), "probe", "probe"))
        try:
            sink.probe()
        finally:
            sink.close()
        return
    if spec.scheme == "parquet":
        from webtrawl.store.sinks.parquet import _pyarrow

        _pyarrow()
    directory = Path(spec.target).parent if spec.scheme == "json" else Path(spec.target)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"sink {spec.name!r}: cannot create {directory}: {exc.strerror or exc}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigError(f"sink {spec.name!r}: {directory} is not writable")


__all__ = ["Rows", "SinkUrl", "What", "crawl_id", "mask", "normalize", "open_sink", "parse", "probe", "register"]
