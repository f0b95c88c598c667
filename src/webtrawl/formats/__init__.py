"""Formats every stage shares, so that none imports another against the data flow: canonical URLs (the frontier's
keys, made by the parser and the fetcher's discovery), the encoding decision (the parser's and the fetcher's
``--render auto`` rule check) and the recrawl state (written by the parser, read by the fetcher's conditional GET
and the WARC writer's revisit records). These modules import no stage. Exports load on first use
(:mod:`webtrawl.lazy`)."""

from typing import TYPE_CHECKING

from webtrawl.lazy import lazy_exports

if TYPE_CHECKING:
    from webtrawl.formats.canonical import CANON_VERSION, canonicalize
    from webtrawl.formats.encoding import choose_encoding
    from webtrawl.formats.recrawl import RecrawlState, conditional_headers, payload_digest

__all__ = ["CANON_VERSION", "RecrawlState", "canonicalize", "choose_encoding", "conditional_headers", "payload_digest"]
__getattr__ = lazy_exports(
    __name__,
    {
        "CANON_VERSION": "webtrawl.formats.canonical",
        "canonicalize": "webtrawl.formats.canonical",
        "choose_encoding": "webtrawl.formats.encoding",
        "RecrawlState": "webtrawl.formats.recrawl",
        "conditional_headers": "webtrawl.formats.recrawl",
        "payload_digest": "webtrawl.formats.recrawl",
    },
)
