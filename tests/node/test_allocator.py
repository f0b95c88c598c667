"""The children's malloc (node/allocator.py): jemalloc where the system has it, the C library's when asked, a clear
error for a library that is not there; and nothing a child runs inherits the preload."""

from __future__ import annotations

import ctypes.util
import multiprocessing.forkserver
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.node.crawlrun import Crawl, node_args, records
from webtrawl.node import allocator
from webtrawl.node.children import prestart
from webtrawl_testweb import TestWeb

_PROBE = """
import os
from pathlib import Path

OUT = Path({out!r})


def parse(page):
    maps = Path("/proc/self/maps").read_text()
    OUT.write_text(repr(("libjemalloc" in maps, os.environ.get("LD_PRELOAD"))))
    return {{"url": page.url}}
"""


def _parser_malloc(web: TestWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, choice: str | None) -> object:
    """(jemalloc mapped in a parser, LD_PRELOAD in its environment) of a crawl run with WEBTRAWL_MALLOC ``choice``."""
    if choice is None:
        monkeypatch.delenv(allocator.ENV, raising=False)
    else:
        monkeypatch.setenv(allocator.ENV, choice)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    tmp_path.mkdir()
    seen, probe = tmp_path / "seen", tmp_path / "probe.py"
    probe.write_text(_PROBE.format(out=str(seen)))
    out = tmp_path / "c"  # a unix socket's path (out/redis/redis.sock) must stay short under xdist's directories
    crawl = Crawl(out, [*web.seeds(1), *node_args(web, "--max-pages", "5", "--extract", f"{probe}:parse")])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    assert records(out)
    return eval(seen.read_text())


@pytest.mark.skipif(not ctypes.util.find_library("jemalloc"), reason="libjemalloc2 not installed (.ci/run has it)")
def test_the_children_allocate_with_jemalloc_unless_told_not_to(
    testweb: TestWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _parser_malloc(testweb, tmp_path / "d", monkeypatch, None) == (True, None)
    assert _parser_malloc(testweb, tmp_path / "s", monkeypatch, "system") == (False, None)


def test_a_malloc_library_that_is_not_there_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "libnothere.so"
    env = {"PATH": "/usr/bin:/bin", allocator.ENV: str(missing)}
    argv = [sys.executable, "-m", "webtrawl", "crawl", "http://127.0.0.1:9/", "--out", str(tmp_path / "c")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"trawl: error: {allocator.ENV}={missing}: no such file (a malloc library's path, or 'system')"
    ], done.stderr


def test_a_users_own_preload_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    allocator.children_malloc.cache_clear()
    monkeypatch.setenv("LD_PRELOAD", "libtcmalloc_minimal.so.4")
    monkeypatch.delenv(allocator.ENV, raising=False)
    try:
        assert allocator.children_malloc() == ""
    finally:
        allocator.children_malloc.cache_clear()


@pytest.mark.skipif(not ctypes.util.find_library("jemalloc"), reason="libjemalloc2 not installed (.ci/run has it)")
def test_the_preload_is_in_the_environment_only_while_the_fork_server_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each child's start asks for the fork server; once it runs, the supervisor's environment (which another thread
    of an embedding program may start a program with at that moment) is left alone."""
    monkeypatch.delenv(allocator.ENV, raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    allocator.children_malloc.cache_clear()
    prestart()  # the fork server runs (started now, or by an earlier test in this process)
    seen: list[str | None] = []
    real = multiprocessing.forkserver.ensure_running

    def ensure_running() -> None:
        seen.append(os.environ.get("LD_PRELOAD"))
        real()

    monkeypatch.setattr(multiprocessing.forkserver, "ensure_running", ensure_running)
    prestart()
    assert seen == [None]
