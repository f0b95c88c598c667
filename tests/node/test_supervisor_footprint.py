"""The supervisor runs no stage: it must not load their libraries (tens of MiB a node would hold for nothing)."""

from __future__ import annotations

import subprocess
import sys

_STAGE_LIBRARIES = ("aiohttp", "selectolax", "lxml", "parsel", "playwright", "trafilatura", "charset_normalizer")


def test_a_crawls_supervisor_imports_no_fetch_parse_extract_or_testweb_library() -> None:
    code = (
        "import sys, webtrawl.cli, webtrawl.node.supervisor; webtrawl.cli._build_parser(['crawl', 'http://a.test/']);"
        "print(' '.join(sorted(sys.modules)))"
    )
    loaded = set(
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout.split()
    )
    assert {name for name in loaded if name.split(".")[0] in _STAGE_LIBRARIES} == set()
    assert not {"webtrawl.fetch.worker", "webtrawl.parse.worker", "webtrawl_testweb.harness"} & loaded
