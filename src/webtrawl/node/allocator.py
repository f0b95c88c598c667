"""The node's children allocate with jemalloc where the system has it (``libjemalloc.so.2``; Debian and Ubuntu:
``apt install libjemalloc2``), preloaded into the fork server they are forked from.

A fetcher and a parser allocate and free a page's body, its TLS buffers, its inflated bytes and its tree every
page, sizes glibc's malloc serves from fresh mappings or gives back by trimming, and faults in again: with jemalloc
the node's CPU per page was ~8% lower on the realistic bench, for 50-80 MiB more memory (benchmarks/RESULTS.md,
2026-12-06). mimalloc was no cheaper than glibc there.

``WEBTRAWL_MALLOC``: unset, jemalloc if found; ``system``, the C library's malloc; a path, that library. A user's own
``LD_PRELOAD`` is left as it is. Only the fork server's exec sees the variable: each child takes the supervisor's
environment as it starts (logs.child_entry), so a program a child runs (Chromium, a hook) never inherits it.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import functools
import os
from collections.abc import Iterator
from pathlib import Path

from webtrawl.errors import ConfigError

ENV = "WEBTRAWL_MALLOC"
_PRELOAD = "LD_PRELOAD"


@functools.cache  # asked at each child's start (children.prestart); find_library runs ldconfig
def children_malloc() -> str:
    """The library to preload into the children, "" for the C library's malloc."""
    choice = os.environ.get(ENV, "").strip()
    if choice == "system" or os.environ.get(_PRELOAD):
        return ""
    if choice:
        if not Path(choice).is_file():
            raise ConfigError(f"{ENV}={choice}: no such file (a malloc library's path, or 'system')")
        return choice
    return ctypes.util.find_library("jemalloc") or ""


@contextlib.contextmanager
def preloaded(library: str) -> Iterator[None]:
    """``library`` in ``LD_PRELOAD`` while a process is started (the fork server), then as before."""
    if not library:
        yield
        return
    os.environ[_PRELOAD] = library
    try:
        yield
    finally:
        del os.environ[_PRELOAD]
