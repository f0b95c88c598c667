"""--max-pages over a resumed crawl: the same command run again after the limit was reached fetches nothing more.

The limit counts every URL that ended (fetched, or failed with an error recorded without a fetch, as a URL robots.txt
disallows): one record each. A resume must count the runs before it the same way, or each resume of a crawl with
such records crawls past its limit."""

from __future__ import annotations

from pathlib import Path

from tests.node.crawlrun import Crawl, node_args, records, stats
from webtrawl_testweb import TestWeb

MAX_PAGES = 150


def test_the_same_command_after_max_pages_was_reached_adds_no_record(testweb: TestWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    command = [*testweb.seeds(3), *node_args(testweb), "--max-pages", str(MAX_PAGES)]
    first = Crawl(out, command)
    assert first.wait(600) == 0, first.log()[-4000:]
    assert "stopping: --max-pages" in first.log()
    before = records(out)
    # the case this is about: URLs that ended without a fetch count towards the limit too
    assert any(row["error"] == "robots" for row in before)
    assert len(before) == MAX_PAGES
    assert stats(out)["counters"]["stored"] == MAX_PAGES

    again = Crawl(out, command, log_name="again.log")
    assert again.wait(600) == 0, again.log()[-4000:]
    assert "stopping: --max-pages" in again.log()
    assert len(records(out)) == MAX_PAGES, [row["url"] for row in records(out)[MAX_PAGES:]]
    assert stats(out)["counters"]["stored"] == MAX_PAGES
