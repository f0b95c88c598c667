"""The output directories removed under a running crawl (a clean-up job, an operator's mistake). What was in the
removed files went with them; nothing fetched after that may go to a file nobody can read, and the node must say
what happened."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from tests.node.crawlrun import Crawl, node_args, node_logs, records, wait_until, warc_responses
from webtrawl_testweb import TestWeb, fetched_urls


def test_output_directories_removed_mid_crawl_are_made_again_and_later_pages_land_in_them(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    web = make_testweb(20, 5)
    out = tmp_path / "crawl"
    seeds = web.seeds(2)
    crawl = Crawl(out, [*seeds, *node_args(web)])
    wait_until(lambda: len(records(out)) >= 40, 300, "40 records", crawl)
    shutil.rmtree(out / "records")
    shutil.rmtree(out / "warc")
    mark = web.mark()  # every page fetched from here on is written after the removal
    assert crawl.wait(600) == 0, crawl.log()[-4000:]

    later = {u for u in fetched_urls(web.entries(since=mark)) if web.model.is_known(u)}
    assert later, "the crawl ended before the removal: nothing to check"
    stored = {row["url"] for row in records(out)}
    assert later <= stored, sorted(later - stored)[:10]
    in_warc = {uri for uri, _ in warc_responses(out)}  # read with warcio: every file whole
    assert later <= in_warc, sorted(later - in_warc)[:10]
    assert "was deleted while being written" in crawl.log() + node_logs(out)
    assert "Traceback" not in crawl.log()
