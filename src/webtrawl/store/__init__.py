"""The output store: the Sink protocol, the fan-out the parser writes through, and the built-in file sinks."""

from webtrawl.store.base import Drop, Item, PageOutput, PageRecord, Sink, SinkContext
from webtrawl.store.fanout import FanOut
from webtrawl.store.jsonl import JsonlWriter
from webtrawl.store.recovery import seal_open_files
from webtrawl.store.registry import STREAMS, open_outputs, open_sink, register_sink, sink_specs
from webtrawl.store.warc import WarcWriter

__all__ = [
    "STREAMS",
    "Drop",
    "FanOut",
    "Item",
    "JsonlWriter",
    "PageOutput",
    "PageRecord",
    "Sink",
    "SinkContext",
    "WarcWriter",
    "open_outputs",
    "open_sink",
    "register_sink",
    "seal_open_files",
    "sink_specs",
]
