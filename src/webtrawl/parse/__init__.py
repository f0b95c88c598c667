"""The parse stage: fetched page -> JSONL record, canonical outlinks and counters (no I/O of its own)."""

from webtrawl.parse.canonical import CANON_VERSION, canonicalize
from webtrawl.parse.process import ParseContext, Processed, process_page
from webtrawl.parse.scope import Scope

__all__ = ["CANON_VERSION", "ParseContext", "Processed", "Scope", "canonicalize", "process_page"]
