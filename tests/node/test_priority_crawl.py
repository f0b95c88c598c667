"""End to end: the order of a crawl, read from the test web's access log (one fetcher, so the log is the order in
which the frontier leased): seeds and shallow pages before deep ones, links a rule or a callback ranked before the
host's ordinary links, sitemap priorities; and sitemap lastmod and a rule's recrawl_after deciding a next round."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.extract.corpus import SPIDERS
from tests.node.crawlrun import Crawl, polite_crawl, stats
from webtrawl_testweb import TestWeb
from webtrawl_testweb.accesslog import LogEntry
from webtrawl_testweb.ranking import SHALLOW

DELAY = 0.1


def _order(entries: list[LogEntry]) -> list[str]:
    """The pages fetched, in the order their requests started (robots.txt and redirects left out)."""
    return [e.url for e in sorted(entries, key=lambda e: e.start_ms) if e.status == 200 and e.path != "/robots.txt"]


def test_seeds_and_shallow_pages_come_before_deep_ones(testweb: TestWeb, tmp_path: Path) -> None:
    """rank.disc.test: the redirect targets /s/<i> (depth 1) are found only after /chain/2 (depth 2) is queued; a
    FIFO per host would fetch the chain first. By level (depth capped at 3) the crawl never goes back up."""
    web = testweb.discovery.ranking
    pages = web.rank_pages()
    order = _order(polite_crawl(testweb, tmp_path / "crawl", web.url("rank.disc.test", "/"), delay=DELAY))
    assert sorted(order) == sorted(pages)
    levels = [min(pages[url], 3) for url in order]
    assert levels == sorted(levels), list(zip(order, levels, strict=True))


@pytest.mark.parametrize("how", ["rule", "callback"])
def test_links_a_rule_or_callback_ranks_come_before_the_hosts_ordinary_links(
    testweb: TestWeb, tmp_path: Path, how: str
) -> None:
    """The chain's links ranked 0 (a rule on /chain/ pages, or a callback's Follow(url, priority=0)): the deep chain
    is fetched before the last of the shallow pages, which by depth would all come first."""
    web = testweb.discovery.ranking
    if how == "rule":
        rules = tmp_path / "rules.toml"
        rules.write_text('[[rule]]\nurl = "/chain/"\npriority = 0\n[rule.fields]\nh = "css:h1::text"\n')
        extract = str(rules)
    else:
        extract = f"{SPIDERS}:ranked"
    out = tmp_path / "crawl"
    order = _order(polite_crawl(testweb, out, web.url("rank.disc.test", "/"), "--extract", extract, delay=DELAY))
    pages = web.rank_pages()
    assert sorted(order) == sorted(pages)
    shallow = [i for i, url in enumerate(order) if "/s/" in url]
    chain = [i for i, url in enumerate(order) if pages[url] >= 2]
    assert len(shallow) == SHALLOW and max(chain) < max(shallow), order


def test_sitemap_priority_ranks_and_lastmod_brings_a_changed_page_back_in_the_next_round(
    testweb: TestWeb, tmp_path: Path
) -> None:
    """hints.disc.test with --recrawl-after 1d and a rule giving the sitemap itself recrawl_after 1 ms. Round one:
    the sitemap's 0.9 pages before its 0.1 ones, though listed after them. Round two: only the sitemap is due (its
    rule), and its new lastmod for /news.html, after the copy we hold, brings that page back; nothing else."""
    web = testweb.discovery.ranking
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nurl = "sitemap"\nrecrawl_after = "0.001"\n[rule.fields]\nh = "css:h1::text"\n')
    out = tmp_path / "crawl"
    args = ["--extract", str(rules), "--recrawl-after", "1d"]
    order = _order(polite_crawl(testweb, out, web.url("hints.disc.test", "/"), *args, delay=DELAY))
    hi, lo = web.hinted("hi"), web.hinted("lo")
    news, old = web.hinted("news")
    assert {*hi, *lo, news, old} <= set(order)
    assert max(order.index(u) for u in hi) < min(order.index(u) for u in lo), order

    web.news_modified = datetime.now(UTC).isoformat()  # the site changed the page after we fetched it
    again = _order(polite_crawl(testweb, out, *args, delay=DELAY, resumed=True))
    assert again == [web.url("hints.disc.test", "/sitemap.xml"), news]
    assert stats(out)["counters"]["recrawl-lastmod"] == 1

    # the sitemap changes for another page's sake, news's lastmod stays: that page answered the same since
    # (a revisit), so it is not fetched again, nor at any later read of the sitemap
    web.old_modified = "2021-01-01"
    third = _order(polite_crawl(testweb, out, *args, delay=DELAY, resumed=True))
    assert third == [web.url("hints.disc.test", "/sitemap.xml")]
    assert stats(out)["counters"]["recrawl-lastmod"] == 1


def test_a_rules_recrawl_after_without_recrawl_after_is_one_clear_error(testweb: TestWeb, tmp_path: Path) -> None:
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nurl = "."\nrecrawl_after = "1h"\n[rule.fields]\nh = "css:h1::text"\n')
    crawl = Crawl(tmp_path / "crawl", [testweb.discovery.ranking.url("rank.disc.test", "/"), "--extract", str(rules)])
    assert crawl.wait(60) != 0
    assert f"trawl: error: {rules}: a rule's recrawl_after needs --recrawl-after" in crawl.log()
    assert "Traceback" not in crawl.log()
