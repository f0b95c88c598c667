"""Two crawls at once in one program (each its own ``out`` and Redis), as an asyncio program gathers them."""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.api.helpers import shop_options
from tests.fixtures.shop_web import ShopWeb

TWO_AT_ONCE = """
import asyncio, json, sys
from webtrawl import Crawler


def title(page):
    yield {"title": page.css("h1::text").get()}


async def main(options):
    crawls = [Crawler(title, out=out, max_pages=3, **options).arun() for out in ("one", "two")]
    for result in await asyncio.gather(*crawls, return_exceptions=True):
        print(result.stats["fetched"] if hasattr(result, "stats") else repr(result))


if __name__ == "__main__":
    asyncio.run(main(json.loads(sys.argv[1])))
"""


@pytest.mark.skipif(ctypes.util.find_library("jemalloc") is None, reason="the children preload jemalloc if found")
def test_two_crawls_started_at_once_both_crawl(shop_web: ShopWeb, tmp_path: Path) -> None:
    """Both crawls started the node's fork server at once: one of them came out of arun() (run() from a thread
    too) as KeyError: 'LD_PRELOAD', which the first had put in the environment for the server and taken out."""
    script = tmp_path / "scrape.py"
    script.write_text(TWO_AT_ONCE)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "WEBTRAWL_MALLOC")}
    args = [sys.executable, str(script), json.dumps(shop_options(shop_web))]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0 and done.stdout == "3\n3\n", (done.stdout, done.stderr[-3000:])
