"""The output directories removed under a running crawl (a clean-up job, an operator's mistake). What was in the
removed files went with them; nothing fetched after that may go to a file nobody can read, and the node must say
what happened."""

from __future__ import annotations

import errno
import shutil
from collections.abc import Callable
from pathlib import Path

from tests.node.crawlrun import Crawl, node_args, node_logs, records, running, wait_until, warc_responses
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


def test_the_whole_out_directory_removed_under_a_crawl_stops_it_with_one_error(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    """--out itself deleted under a crawl on its embedded Redis, whose append-only file and socket went with it:
    the node crawled on into directories the outputs made again, and a process restarted then (or any new
    connection) could not reach Redis: the crawl hung for good, and a stop ended in a child's traceback. The
    node stops, and says why once (exit status 3); its Redis does not outlive it."""
    web = make_testweb(200, 5)
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*web.seeds(20), *node_args(web)])
    wait_until(lambda: len(records(out)) >= 40, 300, "40 records", crawl)
    redis_pid = int((out / "redis" / "redis.pid").read_text())
    _remove_under_writers(out)
    assert crawl.wait(120) == 3, crawl.log()[-4000:]
    log = crawl.log()
    assert f"trawl: error: --out {out} was deleted while the crawl ran" in log, log[-4000:]
    assert "Traceback" not in log and log.count("trawl: error:") == 1
    wait_until(lambda: not running(redis_pid), 30, "the embedded redis-server to end")


def _remove_under_writers(directory: Path) -> None:
    """``rm -rf`` of a directory the crawl still writes into: a file made in it between the walk and the rmdir fails
    the removal with 'Directory not empty' (CI met it), so it is removed again until it is gone once."""
    for _ in range(100):
        try:
            shutil.rmtree(directory)
            return
        except FileNotFoundError:  # a file went between the walk and its unlink; or the directory itself
            if not directory.exists():
                return
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                raise
    raise AssertionError(f"{directory} could not be removed under the crawl")
