"""A worker's glibc heap settings (heap.return_freed_buffers), a parser's trim and its big bodies' huge pages, each in a
fresh process (glibc's settings are process-wide), read from glibc's own accounting (mallinfo2), the page faults of
using memory again and the kernel's account of a mapping (/proc/self/smaps)."""

from __future__ import annotations

import ctypes
import json
import mmap
import subprocess
import sys
from pathlib import Path

import pytest

from webtrawl import heap
from webtrawl.config import Limits
from webtrawl.parse.worker import _BATCH_PAGES

pytestmark = pytest.mark.skipif(heap._MALLINFO2 is None, reason="glibc's mallinfo2 (glibc >= 2.33) is not there")

_MAPPED = """
import json, sys
from webtrawl import heap
heap.return_freed_buffers(int(sys.argv[1]))
out = {}
for size in map(int, sys.argv[2:]):
    before = heap._MALLINFO2().hblkhd
    first = bytearray(size)
    del first  # glibc's default would serve the next one of this size from its heap
    again = bytearray(size)
    out[size] = heap._MALLINFO2().hblkhd - before
    del again
print(json.dumps(out))
"""

_REFAULTS = """
import resource, sys
from webtrawl import heap
from webtrawl.parse.worker import tune_process
keep, body, page, pages = map(int, sys.argv[1:])
tune_process()

def batch(big):  # a batch of pages as a parser holds them, with or without a body cut at the size cap
    held = [bytearray(page) for _ in range(pages)] + ([bytearray(body)] if big else [])
    del held

batch(True)
batch(True)
heap.trim_heap(keep)
faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
batch(False)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)
"""

_HUGE = """
import ctypes, io, sys
from webtrawl import heap
from webtrawl.parse.worker import tune_process
if sys.argv[1] == "parser":
    tune_process()
body = io.BytesIO(bytes(int(sys.argv[2])))  # as the parser's _Inbox reads a body past its buffer
view = body.getbuffer()
heap.huge_pages(view)
view[:] = b"x" * len(view)
anchor = ctypes.c_char.from_buffer(view)
at = ctypes.addressof(anchor)
del anchor
huge_kb = 0
inside = False
for line in open("/proc/self/smaps"):
    head = line.split()[0]
    if "-" in head and ":" not in head:
        low, high = (int(x, 16) for x in head.split("-"))
        inside = low < at + len(view) and at < high  # madvise splits the mapping: each part of the body's counts
    elif inside and line.startswith("AnonHugePages:"):
        huge_kb += int(line.split()[1])
view.release()
assert body.getvalue() == b"x" * int(sys.argv[2])
print(huge_kb)
"""


def _run(code: str, *args: int | str) -> str:
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], check=True, capture_output=True, text=True)
    return out.stdout


def _mapped_growth(threshold: int, *sizes: int) -> dict[int, int]:
    """Per size: glibc's mmapped bytes grown by a buffer of that size, allocated after one was freed."""
    return {int(k): v for k, v in json.loads(_run(_MAPPED, threshold, *sizes)).items()}


def test_a_parsers_big_bodies_are_mapped_each_time_and_its_ordinary_buffers_come_from_the_heap() -> None:
    big, body, step = Limits().max_body, 400 * 1024, 1024 * 1024  # a body at the cap, a page, a bomb's step
    grown = _mapped_growth(heap.PARSER_MMAP_THRESHOLD, big, body, step)
    assert grown[big] >= big  # mapped again: never in the heap, where its free would set off the trimmer
    assert grown[body] == 0
    assert grown[step] == 0


def test_a_fetchers_tls_buffers_are_mapped_each_time() -> None:
    tls = 256 * 1024  # uvloop's read buffer per connection
    grown = _mapped_growth(heap.FETCHER_MMAP_THRESHOLD, tls, 64 * 1024)
    assert grown[tls] >= tls
    assert grown[64 * 1024] == 0


def test_a_parsers_trim_after_a_big_page_keeps_the_working_set_of_its_ordinary_pages() -> None:
    def refaults(keep: int) -> int:
        return int(_run(_REFAULTS, keep, Limits().max_body, 256 * 1024, _BATCH_PAGES))

    given_back = refaults(0)  # malloc_trim(0): every free page goes, to be faulted in again
    assert given_back > _BATCH_PAGES * 256 * 1024 // 4096 // 2  # the probe sees it
    assert refaults(heap.KEEP_FREE) < given_back // 10


def _thp_mode() -> str:
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return ""
    return text.split("[", 1)[1].split("]", 1)[0] if "[" in text else ""


@pytest.mark.skipif(_thp_mode() != "madvise", reason="transparent huge pages only where asked for (madvise)")
def test_a_parsers_big_body_gets_huge_pages_and_a_body_that_may_be_in_the_heap_does_not() -> None:
    size = Limits().max_body
    assert int(_run(_HUGE, "parser", size)) >= 4 * 1024  # two of the five 2 MiB pages inside at least
    assert int(_run(_HUGE, "default", size)) == 0  # glibc's own threshold: huge_pages leaves it alone


def test_release_pages_gives_back_the_whole_pages_inside_a_buffer_and_keeps_its_edges() -> None:
    """A released scratch buffer's whole pages read as zeros (the kernel took them back); the bytes of the pages it
    only shares with other memory (its unaligned start and end) are left as they were."""
    page = mmap.PAGESIZE
    buf = bytearray(b"\xab") * (6 * page)
    view = memoryview(buf)[100:-100]
    heap.release_pages(view)
    anchor = ctypes.c_char.from_buffer(buf)
    start = ctypes.addressof(anchor)
    del anchor
    first = -(-(start + 100) // page) * page - start  # offsets in buf of the whole pages inside the view
    end = (start + len(buf) - 100) // page * page - start
    assert end - first >= 4 * page
    assert not any(buf[first:end])
    assert set(buf[:first]) == set(buf[end:]) == {0xAB}
