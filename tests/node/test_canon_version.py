"""A crawl resumed by a webtrawl that canonicalizes URLs otherwise is told so once, at its start (node/startup.py):
the URLs it queued keep their older form (version 2 kept a host's final dot and a link's user:password@)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.fetch.servers import local_cfg
from webtrawl.formats.canonical import CANON_VERSION
from webtrawl.frontier import RedisFrontier
from webtrawl.node.startup import start_round


@pytest.mark.parametrize("created_by", [CANON_VERSION - 1, CANON_VERSION])
def test_a_crawl_whose_urls_an_older_webtrawl_canonicalized_is_warned_about_at_its_start(
    frontier: Callable[..., RedisFrontier], created_by: int, caplog: pytest.LogCaptureFixture
) -> None:
    older = frontier(canon_version=created_by)  # the crawl as that version created it
    resumed = frontier(prefix=older.core.settings.prefix)  # opened again now: the crawl's meta wins
    with caplog.at_level("WARNING", logger="webtrawl.node"):
        start_round(local_cfg(), resumed, resumed.client, resumed.core.settings.prefix)
    warned = [r.getMessage() for r in caplog.records if "canonicalized by an older webtrawl" in r.getMessage()]
    assert len(warned) == (created_by < CANON_VERSION), warned
