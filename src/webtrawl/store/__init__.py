"""The output store: the Sink protocol, the one sink registry, the fan-out the parser writes through, the sinks. Exports
load on first use (:mod:`webtrawl.lazy`): a fetcher naming a message type does not load the WARC writer."""

from typing import TYPE_CHECKING

from webtrawl.lazy import lazy_exports

if TYPE_CHECKING:
    from webtrawl.formats.sinkurl import SinkUrl, crawl_id, mask, normalize, parse
    from webtrawl.store.base import Drop, Item, PageOutput, PageRecord, Sink, SinkContext
    from webtrawl.store.fanout import FanOut
    from webtrawl.store.jsonl import JsonlWriter
    from webtrawl.store.recovery import seal_open_files
    from webtrawl.store.registry import STREAMS, open_outputs, open_sink, probe, seal_left_open, sink_specs
    from webtrawl.store.sinks.rows import RowMaker, Rows
    from webtrawl.store.warc import WarcWriter

__all__ = [
    "STREAMS",
    "Drop",
    "FanOut",
    "Item",
    "JsonlWriter",
    "PageOutput",
    "PageRecord",
    "RowMaker",
    "Rows",
    "Sink",
    "SinkContext",
    "SinkUrl",
    "WarcWriter",
    "crawl_id",
    "mask",
    "normalize",
    "open_outputs",
    "open_sink",
    "parse",
    "probe",
    "seal_left_open",
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
        **dict.fromkeys(["STREAMS", "open_outputs", "open_sink", "probe", "seal_left_open", "sink_specs"], _REGISTRY),
        **dict.fromkeys(["RowMaker", "Rows"], "webtrawl.store.sinks.rows"),
        **dict.fromkeys(["SinkUrl", "crawl_id", "mask", "normalize", "parse"], "webtrawl.formats.sinkurl"),
        "WarcWriter": "webtrawl.store.warc",
    },
)
