"""A crawl that outgrows ``--expected-urls``: its seen filter grows (a chain of filters per shard) and the operator
is told, in the node's log as it happens and in ``trawl stats``: each filter of the chain is one more Redis read
per new URL, which a larger ``--expected-urls`` avoids."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from tests.node.clusterrun import trawl
from tests.node.crawlrun import Crawl, node_args
from webtrawl_testweb import TestWeb

_GREW = re.compile(r"the seen filter grew past --expected-urls: (\d+) filters per shard now")


def test_a_crawl_past_its_expected_urls_says_its_seen_filter_grew(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    web = make_testweb(20, 5)
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*web.seeds(2), *node_args(web, "--expected-urls", "20", "--shards", "1")])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    grew = [int(n) for n in _GREW.findall(crawl.log())]
    assert grew and grew == sorted(set(grew)) and grew[0] >= 2, crawl.log()[-4000:]  # once per growth, in order
    report = trawl("stats", "--out", str(out)).stdout
    assert f"  filters: {grew[-1]} (grown past --expected-urls" in report, report

    small = tmp_path / "small"
    crawl = Crawl(small, [*web.seeds(1), *node_args(web, "--max-pages", "5")])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    assert not _GREW.search(crawl.log())
    assert "  filters: 1\n" in trawl("stats", "--out", str(small)).stdout
