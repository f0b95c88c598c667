"""The output store: WARC files (raw HTTP exchanges) and JSONL records, both crash-safe by rename."""

from webtrawl.store.jsonl import JsonlWriter
from webtrawl.store.recovery import seal_open_files
from webtrawl.store.warc import WarcWriter

__all__ = ["JsonlWriter", "WarcWriter", "seal_open_files"]
