"""``webtrawl.Crawler`` as a library inside another program: what it prints, the plug-ins it is named, and the
Python values its options take."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from tests.api.helpers import shop_options
from tests.api.pages import Shop
from tests.fixtures.shop_web import ShopWeb
from webtrawl import Crawler


def test_progress_lines_go_to_the_webtrawl_logger_not_to_stderr(
    shop_web: ShopWeb, tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The README: the crawl 'leaves the program's logging alone: progress lines go to the webtrawl logger'. They
    were written to stderr, so a program that logs elsewhere (or not at all) got a line every 10 s it could not
    turn off."""
    with caplog.at_level(logging.INFO, logger="webtrawl.progress"):
        result = Crawler(Shop, out=tmp_path / "crawl", max_pages=3, **shop_options(shop_web)).run()
    assert result.stats["fetched"] == 3
    assert "fetched=" not in capfd.readouterr().err
    lines = [r.getMessage() for r in caplog.records if r.name == "webtrawl.progress"]
    assert lines and all(r.levelno == logging.INFO for r in caplog.records if r.name == "webtrawl.progress")
    assert re.search(r"\bfetched=3 .*state=stopped$", lines[-1])
