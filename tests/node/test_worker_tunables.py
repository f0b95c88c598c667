"""A fetcher's or parser's glibc backs big allocations with transparent huge pages (heap.worker_tunables), and the
tunables do not reach what the worker starts itself nor stay in the supervisor."""

from __future__ import annotations

import ctypes
import json
import os
from pathlib import Path

import pytest

from webtrawl.heap import WORKER_TUNABLES, forget_worker_tunables
from webtrawl.node.children import Child


def _glibc_with_hugetlb() -> bool:
    version = os.confstr("CS_GNU_LIBC_VERSION") if "CS_GNU_LIBC_VERSION" in os.confstr_names else None
    if not version or not version.startswith("glibc "):
        return False
    major, minor = (int(part) for part in version.split()[1].split(".")[:2])
    return (major, minor) >= (2, 35) and Path("/sys/kernel/mm/transparent_hugepage/enabled").exists()


def _vm_flags(address: int) -> list[str]:
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            start, end = (int(x, 16) for x in head.split("-"))
            inside = start <= address < end
        elif inside and head == "VmFlags:":
            return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def report_heap(path: str) -> None:
    """Child target: is an 8 MiB allocation (a big body) madvised for huge pages, and what is left in the env?"""
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    before = os.environ.get("GLIBC_TUNABLES")
    forget_worker_tunables()
    address = libc.malloc(8 << 20)
    report = {"huge": "hg" in _vm_flags(address), "before": before, "after": os.environ.get("GLIBC_TUNABLES")}
    Path(path).write_text(json.dumps(report))


@pytest.mark.skipif(not _glibc_with_hugetlb(), reason="needs glibc >= 2.35 (glibc.malloc.hugetlb) and THP")
@pytest.mark.parametrize("own", [None, "glibc.malloc.perturb=0"])
def test_a_worker_gets_huge_pages_for_big_allocations_and_keeps_the_users_tunables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own: str | None
) -> None:
    if own is None:
        monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    else:
        monkeypatch.setenv("GLIBC_TUNABLES", own)
    out = tmp_path / "report.json"
    child = Child("parser", 0, "tests.node.test_worker_tunables:report_heap", str(out))
    child.start()
    assert child.process is not None
    child.process.join(60)
    assert child.process.exitcode == 0
    assert os.environ.get("GLIBC_TUNABLES") == own  # the supervisor's own environment is as it was
    report = json.loads(out.read_text())
    assert report["before"] == (f"{WORKER_TUNABLES}:{own}" if own else WORKER_TUNABLES)
    assert report["after"] == own  # a browser the worker starts gets the user's tunables only
    assert report["huge"]
