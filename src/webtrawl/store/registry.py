"""Sinks are named by URL in the config and built inside the parser process that writes to them.

``open_sink(url, stream, ctx)`` looks the URL's scheme up in a small table of factories. A stream is one kind of
row: ``warc`` (request/response pairs), ``records`` (one per URL), ``items`` (what extraction produced) and
``dropped`` (links not followed). Built in: ``warc:`` and ``jsonl:[DIR]`` (DIR defaults to ``<out>/<stream>``;
relative to the output directory). Other modules add schemes with :func:`register_sink`.
"""

from __future__ import annotations

import multiprocessing.synchronize
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from webtrawl.errors import ConfigError
from webtrawl.store.base import Sink, SinkContext
from webtrawl.store.fanout import FanOut
from webtrawl.store.files import DroppedSink, JsonlSink, WarcSink, items_of, records_of

if TYPE_CHECKING:
    from webtrawl.config import OutputOptions

STREAMS = ("warc", "records", "items", "dropped")
SinkFactory = Callable[[str, str, SinkContext], Sink]  # (url, stream, ctx)
_FACTORIES: dict[str, SinkFactory] = {}


def register_sink(scheme: str, factory: SinkFactory) -> None:
    _FACTORIES[scheme.lower()] = factory


def known_schemes() -> list[str]:
    return sorted(_FACTORIES)


def open_sink(url: str, stream: str, ctx: SinkContext) -> Sink:
    """The sink ``url`` names, for ``stream``; :class:`ConfigError` for an unknown scheme or a bad URL."""
    if stream not in STREAMS:
        raise ConfigError(f"unknown output stream {stream!r} (one of {', '.join(STREAMS)})")
    scheme = url.split(":", 1)[0].lower() if ":" in url else url.lower()
    factory = _FACTORIES.get(scheme)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES))
        raise ConfigError(f"unknown output {url!r} for {stream} (known: {known})")
    return factory(url, stream, ctx)


def _directory(url: str, stream: str, ctx: SinkContext) -> Path:
    rest = url.split(":", 1)[1] if ":" in url else ""
    if rest.startswith("//"):
        rest = rest[2:]
    return ctx.out_dir / (rest or stream)


def _jsonl(url: str, stream: str, ctx: SinkContext) -> Sink:
    directory = _directory(url, stream, ctx)
    if stream == "dropped":
        return DroppedSink(directory, ctx.prefix, ctx.chunk)
    if stream == "records":
        return JsonlSink(directory, ctx.prefix, ctx.chunk, records_of)
    if stream == "items":
        return JsonlSink(directory, ctx.prefix, ctx.chunk, items_of)
    raise ConfigError(f"{url}: jsonl cannot hold the {stream} stream")


def _warc(url: str, stream: str, ctx: SinkContext) -> Sink:
    if stream != "warc":
        raise ConfigError(f"{url}: warc holds only the warc stream, not {stream}")
    return WarcSink(_directory(url, stream, ctx), ctx.prefix, ctx.warc_max_bytes)


register_sink("jsonl", _jsonl)
register_sink("warc", _warc)


def sink_specs(output: OutputOptions, items: bool) -> list[tuple[str, str]]:
    """(stream, url) of every output the options name, in the order they are written (WARC first, as before);
    ``items``: the crawl extracts items (--extract)."""
    specs = [("warc", "warc:")] if output.warc else []
    specs += [("records", "jsonl:")] if output.jsonl else []
    specs += [("dropped", "jsonl:")]
    if items and output.jsonl:
        specs.append(("items", "jsonl:"))
    specs += [("records", url) for url in output.records_to]  # store/sinks/: csv, parquet, sqlite, postgresql
    if items:
        specs += [("items", url) for url in output.items_to]
    return specs


def open_outputs(
    output: OutputOptions, items: bool, ctx: SinkContext, pause: multiprocessing.synchronize.Event | None = None
) -> FanOut:
    """Build every configured sink (in this process) behind one fan-out; closes what it opened if one fails."""
    sinks: list[Sink] = []
    try:
        for stream, url in sink_specs(output, items):
            sinks.append(open_sink(url, stream, ctx))
    except BaseException:
        for sink in sinks:
            sink.close()
        raise
    return FanOut(sinks, pause=pause)


# csv:, parquet:, sqlite:, postgresql: (store/sinks/ registers them; imported last, it imports register_sink)
from webtrawl.store import sinks as _sinks  # noqa: E402, F401
