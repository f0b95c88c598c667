"""The node under resource pressure: a full disk pauses the crawl (nothing is completed that is not on disk) and
it resumes by itself when space is back, also when the embedded Redis's append-only file is on it; memory above
--max-memory pauses leasing instead of killing the node."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fixtures.disk import fill, tmpfs
from tests.node.crawlrun import (
    Crawl,
    assert_complete_and_polite,
    node_args,
    records,
    stats,
    stopped_at_end,
    wait_until,
)
from tests.store.agekit import age_key
from webtrawl_testweb import TestWeb, fetched_urls, politeness_violations

DELAY = 0.2


@pytest.fixture
def records_on_a_tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """``<tmp>/crawl`` whose ``records/`` is a 1 MiB tmpfs (root only; skipped where mounting is refused)."""
    out = tmp_path / "crawl"
    with tmpfs(out / "records"):
        yield out


def test_a_full_disk_pauses_the_crawl_and_nothing_is_lost(
    make_testweb: Callable[..., TestWeb], records_on_a_tiny_disk: Path
) -> None:
    web = make_testweb(20, 5)
    out = records_on_a_tiny_disk
    filler = fill(out / "records")
    seeds = web.seeds(2)
    mark = web.mark()
    args = [*seeds, *web.crawl_args(), "--delay", str(DELAY), "--robots-retry", "0.2", "--no-warc"]
    crawl = Crawl(out, args)
    wait_until(lambda: "disk full: cannot write to" in crawl.log(), 120, "the disk-full log line", crawl)
    # While the disk is full no URL is completed: its record is not on disk.
    assert stats(out)["counters"].get("stored", 0) == 0
    filler.unlink()
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    assert "disk space is back" in crawl.log()

    rows = records(out)
    for path in (out / "records").glob("*.jsonl*"):
        for line in path.read_text().splitlines():
            json.loads(line)  # every line whole
    urls = [row["url"] for row in rows]
    assert len(urls) == len(set(urls))
    expected = web.model.expected_crawl(seeds)
    assert set(expected.fetched) <= set(urls)
    entries = web.entries(since=mark)
    assert {u for u in fetched_urls(entries) if web.model.is_known(u)} == set(expected.fetched)
    assert politeness_violations(entries, DELAY, web.model.crawl_delays()) == []


def test_a_full_disk_under_the_embedded_redis_pauses_the_crawl_which_goes_on_when_space_is_back(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    """All of --out on a small volume that fills mid-crawl, the embedded Redis's append-only file with it: Redis
    refuses every write (MISCONF) until it can save them. The node took the refusal for a bug and died of it, a
    traceback from each process; it pauses with one redis-full alert and goes on by itself once space is back,
    each page once."""
    web = make_testweb(20, 5)
    seeds = web.seeds(2)
    mark = web.mark()
    with tmpfs(tmp_path / "crawl", "20m") as out:
        crawl = Crawl(out, [*seeds, *node_args(web)])  # its log beside the volume, not on it
        with stopped_at_end(crawl):
            wait_until(lambda: len(records(out)) >= 40, 300, "40 records", crawl)
            filler = fill(out)
            wait_until(lambda: "cannot write its append-only file" in crawl.log(), 120, "the redis-full alert", crawl)
            filler.unlink()
            assert crawl.wait(600) == 0, crawl.log()[-4000:]
        log = crawl.log()
        # once, or again if a write cut back on the full volume gave Redis room for a moment: each time resolved
        fired = log.count("alert redis-full: ")
        assert fired >= 1 and log.count("alert redis-full resolved") == fired, log[-4000:]
        assert f"refuses writes: leasing paused until it can (free space under {out / 'redis'})" in log
        assert "Traceback" not in log, log[-4000:]  # the log files on the full disk too: no line each
        urls = [row["url"] for row in records(out)]
    duplicates = assert_complete_and_polite(web, seeds, mark)
    assert set(web.model.expected_crawl(seeds).fetched) <= set(urls)
    assert len(urls) == len(set(urls)), duplicates


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "encrypted"])
def test_log_files_on_a_full_disk_lose_their_lines_without_a_traceback_for_each(
    make_testweb: Callable[..., TestWeb], tmp_path: Path, encrypted: bool
) -> None:
    """<out>/logs on a volume of its own, full: every line each process logged was a '--- Logging error ---'
    traceback on stderr (hundreds, from every process), burying the lines that matter. The lines the files cannot
    take are lost quietly; the crawl runs to its end."""
    web = make_testweb(10, 5)
    out = tmp_path / "crawl"
    key = ["--encrypt-to", age_key(tmp_path / "key").recipient] if encrypted else []
    with tmpfs(out / "logs", "1m") as logs:
        fill(logs)
        crawl = Crawl(out, [*web.seeds(2), *node_args(web, *key)])
        with stopped_at_end(crawl):
            assert crawl.wait(300) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert "Logging error" not in log and "Traceback" not in log, log[-4000:]
    assert "stopping: finished" in log  # the supervisor's lines still reach stderr
    assert stats(out)["counters"]["stored"] > 10


def test_the_disk_alert_watches_an_output_directory_on_a_volume_of_its_own(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    """WARCs on a small volume mounted at <out>/warc (the output directory itself on a roomy one): the disk alert
    is about the volume that fills, not only about the directory --out names."""
    web = make_testweb(5, 3)
    out = tmp_path / "crawl"
    with tmpfs(out / "warc", "2m") as warc:
        crawl = Crawl(out, [*web.seeds(1), *web.crawl_args(), "--delay", str(DELAY), "--max-pages", "5"])
        assert crawl.wait(120) == 0, crawl.log()[-4000:]
    assert "alert disk: " in crawl.log() and f"free under {warc} (threshold 1.0GiB)" in crawl.log(), crawl.log()


def test_memory_above_the_limit_pauses_leasing_instead_of_dying(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    web = make_testweb(10, 6)
    mark = web.mark()
    out = tmp_path / "crawl"
    args = [*web.seeds(2), *web.crawl_args(), "--delay", str(DELAY), "--max-memory", "1MiB", "--max-time", "4"]
    crawl = Crawl(out, args)
    assert crawl.wait(120) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert "is above --max-memory 1.0MiB: leasing paused" in log
    assert "--max-time 4s reached" in log
    assert web.entries(since=mark) == []  # not a single request while paused
    assert stats(out)["counters"].get("fetched", 0) == 0
