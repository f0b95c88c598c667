"""``trawl seed`` of more URLs than the crawl's seen filter was sized for (``--expected-urls``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.node.clusterrun import TRAWL, trawl
from webtrawl.node.redis_server import EmbeddedRedis


def test_seeding_past_expected_urls_warns_that_the_seen_filter_grew(tmp_path: Path) -> None:
    """A million seeds into a crawl created for 100,000 grew its seen filter twice (3 filters per shard, a Redis
    read each per new URL, for the rest of the crawl) and ``trawl seed`` said nothing: only the nodes' log said so
    later, as INFO, once the crawl's size could no longer change."""
    server = EmbeddedRedis(tmp_path / "redis").start()
    try:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"http://h{i % 50}.test:1/p/{i}\n" for i in range(3000)))
        small = trawl("seed", "--redis", server.url, "--shards", "4", "--expected-urls", "1000", str(seeds))
        warnings = [line for line in small.stderr.splitlines() if "WARNING" in line]
        assert len(warnings) == 1, small.stderr
        assert "the seen filter grew past --expected-urls: 2 filters per shard now" in warnings[0]
        assert "--expected-urls is given when the crawl is created" in warnings[0]
        sized = trawl("seed", "--redis", server.url + "?db=1", "--expected-urls", "10000", str(seeds))
        assert "WARNING" not in sized.stderr and "read 3000 seed URLs: 3000 added" in sized.stdout
    finally:
        server.stop()


def test_a_bad_line_far_into_the_file_says_the_seeds_before_it_are_queued(tmp_path: Path) -> None:
    """``trawl seed`` stopped at a bad line with its error alone: the seeds before it were queued all the same."""
    server = EmbeddedRedis(tmp_path / "redis").start()
    try:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"http://h{i % 50}.test:1/p/{i}\n" for i in range(2500)) + "htp:/broken\n")
        result = subprocess.run(
            [*TRAWL, "seed", "--redis", server.url, str(seeds)], capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 2 and result.stderr.splitlines() == [
            f"trawl: error: {seeds}:2501: not an http(s) URL: 'htp:/broken' (not an http(s) URL: htp:) (the first"
            " 2000 seed URLs are queued: give the seeds again, fixed, to queue the rest; those queued are not queued"
            " twice)"
        ], result.stderr
        assert "queued: 2000" in trawl("status", "--redis", server.url).stdout
    finally:
        server.stop()


def test_the_seen_filter_of_a_crawl_of_few_hosts_grows_before_expected_urls_and_says_why(tmp_path: Path) -> None:
    """120,000 URLs of one site in a crawl created for a million (the default) grew its seen filter to 3 filters, and
    the line said it "grew past --expected-urls", which it had not in all: each of the 64 shards' first filter
    holds 1/64 of it, and one host's URLs all go to one shard. The line now says so."""
    server = EmbeddedRedis(tmp_path / "redis").start()
    try:
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"http://one.test:1/p/{i}\n" for i in range(3000)))
        result = trawl("seed", "--redis", server.url, "--shards", "4", "--expected-urls", "10000", str(seeds))
        assert "read 3000 seed URLs: 3000 added" in result.stdout  # under --expected-urls in all
        assert "a crawl of few hosts grows it long before --expected-urls in all" in result.stderr, result.stderr
    finally:
        server.stop()
