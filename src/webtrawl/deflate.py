"""zlib and gzip streams through ISA-L (the ``isal`` package, a dependency) where it imports, else zlib.

ISA-L reads and writes the same formats with the same API at a fraction of the CPU: it inflates the pages a parser
decodes, compresses WARC records and the robots.txt bodies kept in the frontier store (benchmarks/RESULTS.md).
Its levels are 0-3 (3 compresses about like zlib's 6); ``MAX_LEVEL`` says which scale is in use. Its level 0 is
not zlib's: it is its fastest Huffman coding, never stored blocks, so :func:`gzip_compressor` stores through zlib.
"""

from __future__ import annotations

import zlib
from types import ModuleType
from typing import Any, cast

ZLIB: ModuleType = zlib
ERRORS: tuple[type[Exception], ...] = (zlib.error,)
MAX_LEVEL = 9
try:
    from isal import isal_zlib  # type: ignore[import-not-found,unused-ignore]

    ZLIB, ERRORS, MAX_LEVEL = isal_zlib, (zlib.error, cast(type[Exception], isal_zlib.error)), 3
except ImportError:  # pragma: no cover - optional speed-up
    pass


_GZIP_WBITS = 16 + zlib.MAX_WBITS


def gzip_compressor(level: int) -> Any:
    """A compressor of one gzip member at ``level`` of zlib's scale (0-9; ISA-L's is capped at ``MAX_LEVEL``).

    Level 0 stores the data as it is (zlib's stored blocks): what a payload that is already compressed needs.
    ISA-L's level 0 coded such a payload with static Huffman codes instead: 23% larger, at 5x the CPU of storing
    it (gzip-encoded corpus pages, benchmarks/RESULTS.md).
    """
    if level <= 0:
        return zlib.compressobj(0, zlib.DEFLATED, _GZIP_WBITS)
    return ZLIB.compressobj(min(level, MAX_LEVEL), zlib.DEFLATED, _GZIP_WBITS)
