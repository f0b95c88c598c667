"""glibc heap and cyclic-GC settings for the long-lived worker processes: freed memory goes back to the system,
and the collector runs less often.

A fetcher's and a parser's memory comes and goes with the pages they hold: a 10 MiB body read in many small chunks,
TLS buffers of connections that close. glibc keeps what small allocations freed inside its heap (only the top of the
heap is given back on its own), so a process's RSS ratchets up to its worst moment and stays there; on a node that
sums to the peak of every process at once. The glibc calls are no-ops where libc is not glibc.
"""

from __future__ import annotations

import ctypes
import gc
import mmap
import time
from collections.abc import Callable

_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3
_YOUNG = 10_000  # new containers between two young collections (CPython default: 700)
TRIM_INTERVAL_S = 0.5  # a trim walks the free chunks: ~1 ms for a fragmented 160 MiB heap (RESULTS.md)
KEEP_FREE = 16 * 1024 * 1024  # free heap a worker keeps between pages rather than trim (see trim_heap)
# A fetcher's: its heap top is kept (return_freed_buffers), and a trim after each big body gave back the working set
# of the ordinary pages too (malloc_trim returns every free page), to be faulted in again.
FETCHER_KEEP_FREE = 64 * 1024 * 1024
FETCHER_MMAP_THRESHOLD = 256 * 1024  # see return_freed_buffers
# A parser's: over what its ordinary pages allocate (bodies, decoded bodies, a bomb's 1-2 MiB decoding steps), under a
# body cut at the 10 MiB cap.
PARSER_MMAP_THRESHOLD = 4 * 1024 * 1024
_HUGE_PAGE = 2 * 1024 * 1024  # x86-64's transparent huge page
_PAGE = mmap.PAGESIZE
_MADV_DONTNEED = 4
_MADV_HUGEPAGE = 14


def _libc_call(name: str) -> Callable[..., int] | None:
    try:
        return getattr(ctypes.CDLL("libc.so.6"), name)  # type: ignore[no-any-return]
    except (OSError, AttributeError):  # not glibc: nothing to tune
        return None


_MALLOC_TRIM = _libc_call("malloc_trim")
_MADVISE = _libc_call("madvise")
_mapped_from: int | None = None  # the mmap threshold return_freed_buffers set in this process


def return_freed_buffers(mmap_threshold: int = FETCHER_MMAP_THRESHOLD) -> None:
    """Have glibc serve every allocation of ``mmap_threshold`` or more with its own mmap, returned to the system when
    freed, and keep the top of its heap through the frees of what is below that.

    A fetcher's (256 KiB): uvloop allocates a 256 KiB TLS read buffer per connection (glibc adds its header and
    compares that with the threshold: a threshold of exactly 256 KiB still maps it). glibc's default raises its mmap
    threshold after the first such buffer is freed, so later ones come from the heap, whose pages stay with the
    process when connections close: with a fixed threshold a fetcher holding 64-256 idle connections kept 40-57 MiB
    less (bench_idle.py). A parser's (:data:`PARSER_MMAP_THRESHOLD`): the default rose to 10 MiB after its first
    10 MiB body, so each later one went into the heap, and its free left more than :data:`KEEP_FREE` there: the heap
    trimmer then gave back every free page, the ordinary pages' working set too, to be faulted in again (44.8 -> 26.0
    faults a page, bench_parser_heap.py); a body in its own mapping can also have huge pages (:func:`huge_pages`).
    A fixed threshold also fixes glibc's trim threshold at 128 KiB: the top of the heap went back to the system after
    every body's chunks were freed and was faulted in again for the next body (most of a fetcher's page faults were
    its big bodies' chunks and their join). The heap top is kept now (``M_TRIM_THRESHOLD``, grown ``M_TOP_PAD`` at a
    time); the trimmers still give back what is over their keep-free bound."""
    global _mapped_from
    mallopt = _libc_call("mallopt")
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, mmap_threshold)
        mallopt(_M_TRIM_THRESHOLD, 32 * 1024 * 1024)
        mallopt(_M_TOP_PAD, 4 * 1024 * 1024)
        _mapped_from = mmap_threshold


def huge_pages(buffer: memoryview) -> None:
    """Have the kernel back the 2 MiB-aligned inside of ``buffer`` with transparent huge pages, if it is big enough to
    be a mapping of its own (:func:`return_freed_buffers` fixed the threshold in this process) and not yet written.

    A 10 MiB body read into fresh pages took 2,625 faults and 5.0-5.25 ms after a trim; with huge pages 581 faults and
    1.65-2.7 ms (RESULTS.md, issue 21 parser3). Never for a buffer that may be in glibc's heap: the flag would stay
    on the heap's mapping, and every later heap page there would be a huge one."""
    if _MADVISE is None or _mapped_from is None or len(buffer) < max(_mapped_from, 2 * _HUGE_PAGE):
        return
    _advise_inside(buffer, _HUGE_PAGE, _MADV_HUGEPAGE)


def release_pages(buffer: memoryview) -> None:
    """Give the system back the whole pages inside ``buffer``, a writable scratch buffer whose contents nobody reads
    again before writing it (they read as zeros if they are): it stays allocated and is faulted in when next
    written. Only pages entirely inside the buffer are given back, so the allocator's own bytes around it stay."""
    if _MADVISE is None or len(buffer) < 2 * _PAGE:
        return
    _advise_inside(buffer, _PAGE, _MADV_DONTNEED)


def _advise_inside(buffer: memoryview, unit: int, advice: int) -> None:
    """madvise ``advice`` for the ``unit``-aligned inside of a writable ``buffer`` (nothing if there is none)."""
    assert _MADVISE is not None
    anchor = ctypes.c_char.from_buffer(buffer)  # a writable buffer's address (the ctypes object lets go of it)
    start = ctypes.addressof(anchor)
    del anchor
    first = -(-start // unit) * unit
    end = (start + len(buffer)) // unit * unit
    if end > first:
        _MADVISE(ctypes.c_void_p(first), ctypes.c_size_t(end - first), advice)


class _MallInfo2(ctypes.Structure):
    _fields_ = [  # all ten: glibc writes the whole struct into the caller's buffer
        (name, ctypes.c_size_t)
        for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks")
    ] + [("keepcost", ctypes.c_size_t)]


def _free_bytes_call() -> Callable[[], _MallInfo2] | None:
    call = _libc_call("mallinfo2")  # glibc >= 2.33
    if call is not None:
        call.restype = _MallInfo2  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


_MALLINFO2 = _free_bytes_call()


def trim_heap(keep_free: int = 0) -> None:
    """``malloc_trim(0)``: it returns the free pages inside the heap too, which glibc's own trimming (top of the
    heap only) never does. Not while the heap holds ``keep_free`` bytes or fewer that are free (where glibc can
    tell): the pages of a working set that is freed and allocated again page after page would only be returned
    to be faulted in again, at ~3.4 us a page on this kind of VM (RESULTS.md, issue 21)."""
    if _MALLOC_TRIM is None:
        return
    if keep_free and _MALLINFO2 is not None and _MALLINFO2().fordblks <= keep_free:
        return
    _MALLOC_TRIM(0)


class HeapTrimmer:
    """:func:`trim_heap` at most every ``interval`` seconds, for a loop that runs far more often than that."""

    def __init__(self, interval: float = TRIM_INTERVAL_S) -> None:
        self._interval = interval
        self._next = time.monotonic() + interval

    def maybe_trim(self) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self._interval
        trim_heap(KEEP_FREE)


def collect_less() -> None:
    """Fewer cyclic-GC passes in a worker process, and none over what it imported.

    A fetcher spent 8-9% of its CPU in the collector on the realistic bench (a parser ~3%): the default young
    threshold (700 new containers) ran a pass every few pages, and each pass and every older one walked the big
    containers that live a while (a compiled robots.txt of 16,000 rules, the per-host state) again. Freezing the
    objects of the imports keeps the full passes off them; 10,000 containers per young pass is a fetcher's
    allocations for some 50 pages, so cyclic garbage (an exception's traceback holding a body) still goes within
    a fraction of a second. Measured: 3-4.5% of a fetcher's CPU, 0.5% of a parser's (RESULTS.md, issue 21)."""
    gc.freeze()
    gc.set_threshold(_YOUNG, *gc.get_threshold()[1:])
