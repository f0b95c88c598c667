"""The parse stage: fetched page -> JSONL record, canonical outlinks and counters (no I/O of its own). Exports load
on first use (:mod:`webtrawl.lazy`). Canonical URLs and the encoding decision are shared formats
(:mod:`webtrawl.formats`)."""

from typing import TYPE_CHECKING

from webtrawl.lazy import lazy_exports

if TYPE_CHECKING:
    from webtrawl.parse.process import ParseContext, Processed, process_page
    from webtrawl.parse.scope import Scope

__all__ = ["ParseContext", "Processed", "Scope", "process_page"]
__getattr__ = lazy_exports(
    __name__,
    {
        "ParseContext": "webtrawl.parse.process",
        "Processed": "webtrawl.parse.process",
        "process_page": "webtrawl.parse.process",
        "Scope": "webtrawl.parse.scope",
    },
)
