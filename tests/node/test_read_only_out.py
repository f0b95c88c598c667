"""A stopped crawl whose --out is read-only (a volume mounted read-only, an archive's copy): the commands that read
it back start its embedded Redis there, which needs to write. They say so in one line instead of a traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.fixtures.disk import read_only
from tests.node.crawlrun import Crawl, node_args
from webtrawl_testweb import TestWeb


def test_reading_back_a_crawl_on_a_read_only_volume_is_one_error_line(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    web = make_testweb(3, 3)
    out = tmp_path / "crawl"
    assert Crawl(out, [*web.seeds(1), *node_args(web)]).wait(300) == 0
    with read_only(out):
        for command in (["status"], ["requeue"], ["export", "--to", f"jsonl:{tmp_path / 'rows'}"]):
            done = subprocess.run(
                [sys.executable, "-m", "webtrawl", *command, "--out", str(out)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 3, (command, done.stderr)
            assert done.stderr == (
                f"trawl: error: cannot start the crawl's Redis in {out / 'redis'}: Read-only file system\n"
            ), (command, done.stderr)
