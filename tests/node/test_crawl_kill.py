"""End to end: one of a running node's processes killed (kill -9) or stopped (SIGSTOP) mid-crawl: the supervisor
alone, the fork server, a fetcher, a parser. Each time the crawl ends complete and polite, with one record a page.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections import Counter
from pathlib import Path

from tests.node.crawlrun import (
    assert_complete_and_polite,
    assert_one_record_a_page,
    crawl_until,
    records,
    resume_to_the_end,
    running,
    wait_until,
)
from webtrawl_testweb import TestWeb


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _pages_since(web: TestWeb, mark: int) -> int:
    """Pages served since ``mark``, robots.txt files not counted: a burst of new hosts' robots.txt can come first,
    and a parser is handed pages only."""
    return sum(1 for entry in web.entries(since=mark) if not entry.path.startswith("/robots"))


def _queued_bytes(pid: int) -> int:
    """The most bytes waiting unread in one of the Unix sockets of process ``pid`` (``ss``'s Recv-Q)."""
    listing = subprocess.run(["ss", "-xpH"], capture_output=True, text=True, check=True).stdout
    mine = (line.split() for line in listing.splitlines() if f"pid={pid}," in line)
    return max((int(fields[2]) for fields in mine if fields[1] == "ESTAB"), default=0)


def test_kill_9_of_the_supervisor_alone_ends_its_children_and_resume_loses_nothing(
    testweb: TestWeb, tmp_path: Path
) -> None:
    """``kill -9 PID`` of the node's own process, not its group: its fetchers and parsers must not go on as
    orphans, leasing and writing the out's files beside the node that resumes it, nor its embedded redis-server
    run on for ever if the crawl is never resumed."""
    seeds, mark, out, crawl = crawl_until(testweb, tmp_path, 100)
    children = crawl.children()
    assert sorted(children) == ["fetcher-0", "fetcher-1", "parser-0"]
    redis_pid = int((out / "redis" / "redis.pid").read_text())
    os.kill(crawl.proc.pid, signal.SIGKILL)
    crawl.wait(30)
    try:
        wait_until(lambda: not any(running(pid) for pid in children.values()), 60, "the children to end")
        wait_until(lambda: not running(redis_pid), 60, "the embedded redis-server to end")
    finally:
        with contextlib.suppress(ProcessLookupError):  # orphans left (a failure): not to crawl on beside other tests
            os.killpg(crawl.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.kill(redis_pid, signal.SIGKILL)

    resume_to_the_end(testweb, out, seeds, mark)


def test_kill_9_of_the_fork_server_restarts_the_children_without_two_of_a_kind_writing(
    testweb: TestWeb, tmp_path: Path
) -> None:
    """The supervisor learns of its children's exits through the fork server: killed, every child looks dead. The
    node starts new ones; the old ones, still running, must end rather than write the same files beside them."""
    seeds, mark, out, crawl = crawl_until(testweb, tmp_path, 100)
    old = crawl.children()
    fork_server = _parent(old["parser-0"])
    assert fork_server != crawl.proc.pid and {_parent(pid) for pid in old.values()} == {fork_server}
    os.kill(fork_server, signal.SIGKILL)
    wait_until(lambda: not any(running(pid) for pid in old.values()), 60, "the old children to end", crawl)
    assert crawl.wait(600) == 0, crawl.log()[-4000:]
    assert "restarting it" in crawl.log()
    assert_complete_and_polite(testweb, seeds, mark)  # pages in flight at the kill may be fetched twice
    assert_one_record_a_page(out)  # but stored once


def test_kill_9_of_one_fetcher_is_restarted_and_its_leases_re_leased(testweb: TestWeb, tmp_path: Path) -> None:
    seeds, mark, out, crawl = crawl_until(testweb, tmp_path, 200, "--concurrency", "32")
    victim = crawl.children()["fetcher-0"]
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: crawl.children().get("fetcher-0") not in (None, victim), 60, "fetcher-0 restarted", crawl)
    assert crawl.wait(600) == 0, crawl.log()[-4000:]

    assert f"fetcher-0 (pid {victim}) died (killed by signal 9); restarting it" in crawl.log()
    duplicates = assert_complete_and_polite(testweb, seeds, mark)

    # Only the dead fetcher's leases may have been fetched twice: its next life took them back. They are more than
    # --concurrency: sleeping host sessions hold a lease each, and so do pages on their way to a parser (KEEP).
    found = re.search(r"took back (\d+) leases of its previous life", (out / "logs" / "fetcher-0.log").read_text())
    taken_back = int(found.group(1)) if found else 0
    extra_fetches = sum(count - 1 for count in duplicates.values())
    assert extra_fetches <= taken_back, (extra_fetches, taken_back)
    # Every page has exactly one record: the next life took its leases back only once the parsers had stored what
    # the dead one had handed them (pagepipe's barrier), so a page fetched twice had never reached a parser.
    urls = [row["url"] for row in records(out)]
    assert set(testweb.model.expected_crawl(seeds).fetched) <= set(urls)
    assert [url for url, n in Counter(urls).items() if n > 1] == []


def test_kill_9_of_a_fetcher_while_its_parser_is_behind_leaves_one_record_a_page(
    testweb: TestWeb, tmp_path: Path
) -> None:
    """The dead fetcher's pages wait in the stopped parser (its socket, its batch) while the fetcher's next life
    starts: that life takes the dead one's leases back only once the parser has stored them, so none is fetched
    and recorded a second time."""
    seeds, mark, out, crawl = crawl_until(testweb, tmp_path, 100, "--concurrency", "32")
    parser, victim = crawl.children()["parser-0"], crawl.children()["fetcher-0"]
    stopped_at = testweb.mark()
    os.kill(parser, signal.SIGSTOP)
    try:
        wait_until(lambda: _pages_since(testweb, stopped_at) >= 20, 60, "20 pages for the stopped parser", crawl)
        os.kill(victim, signal.SIGKILL)
        log = out / "logs" / "fetcher-0.log"
        waits = ("waits for the parsers to store", "took back")
        wait_until(
            lambda: log.exists() and any(w in log.read_text() for w in waits), 60, "fetcher-0's next life", crawl
        )
    finally:
        os.kill(parser, signal.SIGCONT)
    assert crawl.wait(600) == 0, crawl.log()[-4000:]

    assert_complete_and_polite(testweb, seeds, mark)
    urls = [row["url"] for row in records(out)]
    assert set(testweb.model.expected_crawl(seeds).fetched) <= set(urls)
    assert [url for url, n in Counter(urls).items() if n > 1] == []


def test_kill_9_of_a_parser_gives_the_pages_it_had_not_stored_back_at_once(testweb: TestWeb, tmp_path: Path) -> None:
    """The pages a parser dies with are fetched again as soon as it is gone, not after --process-ttl (600 s here,
    longer than the crawl is given to end): the fetchers take back those it had not confirmed as stored."""
    seeds, mark, out, crawl = crawl_until(testweb, tmp_path, 100, "--concurrency", "32", "--process-ttl", "600")
    victim = crawl.children()["parser-0"]
    stopped_at = testweb.mark()
    os.kill(victim, signal.SIGSTOP)  # what it receives from now on, it never stores
    wait_until(lambda: _pages_since(testweb, stopped_at) >= 20, 60, "20 pages for the stopped parser", crawl)
    # On a busy machine the fetchers may not have handed it a whole page yet (then it dies with nothing to take
    # back): wait until one of its sockets holds two pages' worth, so at least one whole page it will never store.
    frame = 2 * (max(max(e.nbytes, e.decoded) for e in testweb.entries(since=stopped_at)) + 16_384)
    wait_until(lambda: _queued_bytes(victim) >= frame, 60, "a whole page in the stopped parser's socket", crawl)
    os.kill(victim, signal.SIGKILL)
    assert crawl.wait(240) == 0, crawl.log()[-4000:]

    assert f"parser-0 (pid {victim}) died (killed by signal 9); restarting it" in crawl.log()
    logs = "".join(path.read_text() for path in (out / "logs").glob("fetcher-*.log"))
    assert re.search(r"took back [1-9]\d* of the \d+ pages a dead parser had not stored", logs), logs[-2000:]
    assert_complete_and_polite(testweb, seeds, mark)
    assert set(testweb.model.expected_crawl(seeds).fetched) <= {row["url"] for row in records(out)}
    assert_one_record_a_page(out)
