"""zlib and gzip streams through ISA-L (the ``isal`` package, a dependency) where it imports, else zlib.

ISA-L reads and writes the same formats with the same API at a fraction of the CPU: it inflates the pages a parser
decodes, compresses WARC records and the robots.txt bodies kept in the frontier store (benchmarks/RESULTS.md).
Its levels are 0-3 (3 compresses about like zlib's 6); ``MAX_LEVEL`` says which scale is in use.
"""

from __future__ import annotations

import zlib
from types import ModuleType
from typing import cast

ZLIB: ModuleType = zlib
ERRORS: tuple[type[Exception], ...] = (zlib.error,)
MAX_LEVEL = 9
try:
    from isal import isal_zlib  # type: ignore[import-not-found,unused-ignore]

    ZLIB, ERRORS, MAX_LEVEL = isal_zlib, (zlib.error, cast(type[Exception], isal_zlib.error)), 3
except ImportError:  # pragma: no cover - optional speed-up
    pass
