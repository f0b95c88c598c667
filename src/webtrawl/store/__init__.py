"""The output store: the Sink protocol, the fan-out the parser writes through, and the built-in file sinks. Exports
load on first use (:mod:`webtrawl.lazy`): a fetcher naming a message type does not load the WARC writer."""

from typing import TYPE_CHECKING

from webtrawl.lazy import lazy_exports

if TYPE_CHECKING:
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
_BASE = "webtrawl.store.base"
_REGISTRY = "webtrawl.store.registry"
__getattr__ = lazy_exports(
    __name__,
    {
        **dict.fromkeys(["Drop", "Item", "PageOutput", "PageRecord", "Sink", "SinkContext"], _BASE),
        "FanOut": "webtrawl.store.fanout",
        "JsonlWriter": "webtrawl.store.jsonl",
        "seal_open_files": "webtrawl.store.recovery",
        **dict.fromkeys(["STREAMS", "open_outputs", "open_sink", "register_sink", "sink_specs"], _REGISTRY),
        "WarcWriter": "webtrawl.store.warc",
    },
)
