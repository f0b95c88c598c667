"""A seeds file of millions of lines, as a long broad crawl starts from: it takes minutes to queue."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.api.helpers import small_crawl
from tests.api.pages import title
from tests.node.crawlrun import stats
from webtrawl import Crawler, InputError
from webtrawl.node import seeds
from webtrawl_testweb import TestWeb


class _StopOnProgress(logging.Handler):
    """Stops the crawl (as Ctrl-C does) at its first seeding progress line."""

    def __init__(self, crawler: Crawler) -> None:
        super().__init__()
        self.crawler = crawler
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        if record.getMessage().startswith("seeded "):
            self.crawler.stop()


def test_a_big_seeds_file_logs_its_progress_and_a_stop_while_seeding_stops_the_crawl(
    testweb: TestWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``trawl crawl --seeds`` of 2 million lines said nothing for the two minutes it took to queue them (``trawl
    seed`` logs its progress every 5 s), and Ctrl-C (``crawler.stop()``) was not seen until the whole file was
    queued. Now the node logs the same progress lines, and a stop ends the seeding at its next batch, saying how
    many were queued and how to queue the rest."""
    monkeypatch.setattr(seeds, "SEED_LOG_EVERY_S", 0.0)  # a line per batch of 1,000: no test waits 5 s
    seeds_file = tmp_path / "seeds.txt"
    urls = [f"{seed}?n={i}" for i in range(2000) for seed in testweb.seeds(3)]
    seeds_file.write_text("".join(f"{url}\n" for url in urls))
    out = tmp_path / "crawl"
    crawler = Crawler(title, out=out, seeds_file=seeds_file, **small_crawl(testweb, max_pages=5))
    handler = _StopOnProgress(crawler)
    logger = logging.getLogger("webtrawl.node")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        result = crawler.run()
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    assert "seeded 1000 URLs so far (1000 new)" in handler.lines
    stopped = [line for line in handler.lines if line.startswith("stopped while seeding")]
    assert stopped == [
        "stopped while seeding: 1000 seed URLs read (1000 queued), the rest not; give the same seeds again to"
        " queue them (those queued are not queued twice)"
    ]
    counters = stats(out)["counters"]
    assert counters["queued"] == 1000 and counters.get("fetched", 0) == 0  # stopped before fetching anything
    assert result.stats["fetched"] == 0
    # the same seeds again: the rest is queued, those queued before are not queued twice
    again = Crawler(title, out=out, seeds_file=seeds_file, max_pages=1).run()
    assert again.stats["added"] == len(urls)


def test_a_bad_line_far_into_a_seeds_file_says_the_seeds_before_it_are_queued(testweb: TestWeb, tmp_path: Path) -> None:
    """A bad line at line 200,001 of a seeds file stopped ``trawl crawl`` with the line's error alone, which reads as
    if nothing had started: the crawl was created and the 200,000 seeds before it queued (a run again with other
    settings, thinking it new, was then a resume). The error says so now, and the same seeds given again, fixed,
    queue the rest."""
    seeds_file = tmp_path / "seeds.txt"
    urls = [f"{seed}?n={i}" for i in range(1000) for seed in testweb.seeds(3)]
    seeds_file.write_text("".join(f"{url}\n" for url in urls[:2500]) + "htp:/broken\n")
    out = tmp_path / "crawl"
    with pytest.raises(InputError) as raised:
        Crawler(title, out=out, seeds_file=seeds_file, **small_crawl(testweb, max_pages=1)).run()
    assert str(raised.value) == (
        f"{seeds_file}:2501: not an http(s) URL: 'htp:/broken' (not an http(s) URL: htp:) (the first 2000 seed URLs"
        " are queued: give the seeds again, fixed, to queue the rest; those queued are not queued twice)"
    )
    assert stats(out)["counters"]["queued"] == 2000
    seeds_file.write_text("".join(f"{url}\n" for url in urls))
    again = Crawler(title, out=out, seeds_file=seeds_file).run()
    assert again.stats["added"] == len(urls)


def test_seeds_the_seen_filter_takes_for_seen_in_a_new_crawl_are_not_said_to_be_queued_already(
    testweb: TestWeb, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """2 million distinct seeds into a new crawl logged "2 seed(s) given were queued or fetched in this crawl
    already": nothing was, they were the seen filter's false positives, dropped. The line now says that a seed
    the filter takes for seen counts too (forced here by a filter sized for 100 URLs at a 10% rate)."""
    seeds_file = tmp_path / "seeds.txt"
    urls = [f"{seed}?n={i}" for i in range(1000) for seed in testweb.seeds(3)]
    seeds_file.write_text("".join(f"{url}\n" for url in urls))
    options = small_crawl(testweb, max_pages=1, expected_urls=100, bloom_error=0.1)
    with caplog.at_level(logging.INFO, logger="webtrawl.node"):
        result = Crawler(title, out=tmp_path / "crawl", seeds_file=seeds_file, **options).run()
    lost = len(urls) - result.stats["added"]
    assert lost > 0  # all distinct: each one not queued was taken for seen
    assert (
        f"{lost} seed(s) given were queued or fetched in this crawl already: not queued again (a seed given twice, or"
        " one the seen filter takes for seen at its false-positive rate, --bloom-error, counts too)"
    ) in caplog.messages


def test_seeds_past_the_host_budget_are_said_not_to_be_queued(
    testweb: TestWeb, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """120,000 seeds of one site (a sitemap's URLs as a seeds file) against the default --host-budget of 100,000:
    19,998 were dropped with no word but a counter in the progress line (no dropped/ line either), where ``trawl
    seed`` prints them. The node now says how many were refused, and by which limit."""
    seeds_file = tmp_path / "seeds.txt"
    site = testweb.seeds(1)[0]
    seeds_file.write_text("".join(f"{site}item/{i}\n" for i in range(30)))
    options = small_crawl(testweb, max_pages=1, host_budget=20)
    with caplog.at_level(logging.INFO, logger="webtrawl.node"):
        result = Crawler(title, out=tmp_path / "crawl", seeds_file=seeds_file, **options).run()
    assert result.stats["added"] == 20
    assert "10 seed(s) not queued, refused by the frontier: 10 budget (--host-budget)" in caplog.messages
