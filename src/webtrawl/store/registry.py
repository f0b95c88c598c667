"""The one sink registry: sinks are named by URL in the config and built inside the parser process that writes.

``open_sink(url, stream, ctx)`` builds a built-in from its row in :mod:`.schemes` (``warc:``, ``jsonl:[DIR]``,
``csv:DIR``, ``parquet:DIR``, ``sqlite:///PATH``, ``postgresql://...``; a directory left out is the crawl's own
``<out>/<stream>``) or a user's class named by import path, ``package.module:Class?key=value&...``: imported here,
built as ``Class(stream, ctx, **{key: value})``. A stream is one kind of row: ``warc`` (request/response pairs),
``records`` (one per URL), ``items`` (what extraction produced), ``dropped`` (links not followed), ``chunks``
(``--chunks``) and ``changes`` (``--changes``; ``--on-change CMD`` is a sink of it, :mod:`webtrawl.store.hook`).
:func:`probe` runs at start (``trawl crawl``, ``trawl node``, ``trawl export``), so a bad URL, a wrong password or
an import path that names nothing fails then, with one line, and not later in a parser.
"""

from __future__ import annotations

import functools
import importlib
import multiprocessing.synchronize
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from webtrawl.errors import ConfigError
from webtrawl.formats.sinkurl import KINDS, SinkUrl, parse
from webtrawl.importpath import check_options, load_object
from webtrawl.store.base import Sink, SinkContext
from webtrawl.store.fanout import FanOut
from webtrawl.store.hook import CommandSink
from webtrawl.store.schemes import BUILTIN

if TYPE_CHECKING:
    from webtrawl.config import OutputOptions

STREAMS = ("warc", "records", "items", "dropped", "chunks", "changes")
_SINK_METHODS = ("write", "flush", "close")


@functools.cache
def _function(path: str) -> Callable[..., Any]:
    """A built-in's ``module:function`` (ours: a failure here is a bug, not bad input)."""
    module, _, name = path.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return found


def _flag(stream: str) -> str:
    return f"--{stream}-to" if stream in ("items", "records") else f"sink for {stream}"


def _user_class(spec: SinkUrl, stream: str, flag: str = "") -> Callable[..., Any]:
    """The user's sink class, imported; ConfigError if it is not one. ``flag``: the option that named it, if
    not the crawl's own for ``stream``."""
    cls = load_object(spec.target, flag or _flag(stream))
    missing = [method for method in _SINK_METHODS if not callable(getattr(cls, method, None))]
    if not callable(cls) or missing:
        raise ConfigError(f"sink {spec.name!r}: {spec.target} is not a sink class (needs write, flush and close)")
    return cls  # type: ignore[no-any-return]


def open_sink(url: str, stream: str, ctx: SinkContext) -> Sink:
    """The sink ``url`` names, for ``stream``; :class:`ConfigError` for an unknown scheme or a bad URL."""
    if stream not in STREAMS:
        raise ConfigError(f"unknown output stream {stream!r} (one of {', '.join(STREAMS)})")
    spec = parse(url)
    row = BUILTIN.get(spec.scheme)
    if row is None:
        sink: Sink = _user_class(spec, stream)(stream, ctx, **dict(spec.options))
        if not getattr(sink, "name", ""):
            sink.name = spec.name
        return sink
    streams = KINDS[spec.scheme].streams
    if stream not in streams:
        raise ConfigError(f"sink {spec.name!r}: {spec.scheme} holds {' or '.join(streams)}, not {stream}")
    built: Sink = _function(row.factory)(spec, stream, ctx)
    return built


def probe(url: str, stream: str, encrypt_to: tuple[str, ...] = (), flag: str = "") -> None:
    """Fail now, with one line, if the sink cannot be written: unreachable server, wrong password, missing
    database, a table that is not ours, a directory we cannot create, pyarrow not installed, an import path that
    names no sink class or options its class does not take. A built-in is opened (and its ``probe()`` run if it
    has one) and closed; a user's class is imported and its options checked against its signature, not built.
    ``flag``: the option the user gave ``url`` to, for the error (default: the crawl's own for ``stream``)."""
    spec = parse(url)
    if spec.scheme not in BUILTIN:
        cls = _user_class(spec, stream, flag)
        where = f"sink {spec.name!r}: {spec.target}(stream, ctx, **options)"
        check_options(cls, where, stream, None, **dict(spec.options))
        return
    try:
        # encrypted as the crawl's own will be: a plain json: sink writes its (empty) FILE at once
        sink = open_sink(url, stream, SinkContext(Path.cwd(), "probe", "probe", encrypt_to=encrypt_to))
    except OSError as exc:
        raise ConfigError(f"sink {spec.name!r}: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None
    try:
        check = getattr(sink, "probe", None)
        if callable(check):
            check()
    finally:
        sink.close()


_SINK_OPTIONS = ("items_to", "records_to", "chunks_to", "changes_to")


def sink_urls(output: OutputOptions, saved: dict[str, Any] | None) -> list[str]:
    """The sinks this run names and those the crawl's ``saved`` settings named (read before this run saves its
    own): a resume that names other sinks must still seal what a killed run left in the ones it drops."""
    given = [url for name in _SINK_OPTIONS for url in getattr(output, name)]
    before = [url for name in _SINK_OPTIONS for url in (saved or {}).get(name) or () if isinstance(url, str)]
    return list(dict.fromkeys([*given, *before]))


def seal_left_open(urls: list[str], node_id: str) -> None:
    """Seal the ``.open`` files this node's parsers left in the file sinks (a resume with fewer parsers would not
    reopen them, nor one that names other sinks: a Parquet file left without its footer, which nothing reads, a
    JSON file without the rows of its journals); run before any parser starts. Other nodes' files in a shared
    directory are left alone."""
    for url in urls:
        try:
            spec = parse(url)
        except ConfigError:  # a saved sink this version does not read: nothing of ours to seal
            continue
        row = BUILTIN.get(spec.scheme)
        if row is not None and row.seal_dir:
            _function(row.seal_dir)(Path(spec.target), f"{node_id}-p")


def sink_specs(
    output: OutputOptions, items: bool, *, chunks: bool = False, changes: bool = False
) -> list[tuple[str, str]]:
    """(stream, url) of every output the options name, in the order they are written (WARC first, as before);
    ``items``: the crawl extracts items (--extract); ``chunks``, ``changes``: --chunks, --changes."""
    specs = [("warc", "warc:")] if output.warc else []
    specs += [("records", "jsonl:")] if output.jsonl else []
    specs += [("dropped", "jsonl:")]
    if items and output.jsonl:
        specs.append(("items", "jsonl:"))
    specs += [("records", url) for url in output.records_to]
    if items:
        specs += [("items", url) for url in output.items_to]
    if chunks:
        specs += [("chunks", "jsonl:")] if output.jsonl else []
        specs += [("chunks", url) for url in output.chunks_to]
    if changes:
        specs += [("changes", "jsonl:")] if output.jsonl else []
        specs += [("changes", url) for url in output.changes_to]
    return specs


def open_outputs(
    output: OutputOptions,
    items: bool,
    ctx: SinkContext,
    pause: multiprocessing.synchronize.Event | None = None,
    *,
    chunks: bool = False,
    changes: bool = False,
) -> FanOut:
    """Build every configured sink (in this process) behind one fan-out; closes what it opened if one fails."""
    sinks: list[Sink] = []
    streams: set[str] = set()
    try:
        for stream, url in sink_specs(output, items, chunks=chunks, changes=changes):
            sinks.append(open_sink(url, stream, ctx))
            streams.add(stream)
        if changes and output.on_change:  # a shell command, not a URL: built here, not through open_sink
            sinks.append(CommandSink(output.on_change))
    except BaseException:
        for sink in sinks:
            sink.close()
        raise
    return FanOut(sinks, pause=pause, streams=streams)
