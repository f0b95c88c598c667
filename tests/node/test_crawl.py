"""End to end: the real ``trawl crawl`` (embedded Redis, fetchers, parsers) against the real local test web.

What a user relies on is checked where it is visible: in the test server's access log (every expected page fetched
once, politeness gaps, robots.txt first, nothing disallowed), in the WARC files read back with warcio, and in the
JSONL records.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.node.clusterrun import TRAWL
from tests.node.crawlrun import Crawl, records, stats, wait_until, warc_responses
from webtrawl_testweb import (
    TestWeb,
    duplicate_fetches,
    fetched_urls,
    politeness_violations,
    robots_first_violations,
)

DELAY = 0.5


def _args(web: TestWeb, *extra: str) -> list[str]:
    return [
        *web.crawl_args(),
        "--delay",
        str(DELAY),
        "--fetchers",
        "2",
        "--parsers",
        "1",
        "--robots-retry",
        "0.2",
        *extra,
    ]


def _crawl_until(web: TestWeb, tmp_path: Path, count: int, *extra: str) -> tuple[list[str], int, Path, Crawl]:
    """A crawl of three seeds, running, once it has stored ``count`` records: its seeds, the test web's log mark
    before it, its out and the crawl."""
    seeds = web.seeds(3)
    mark = web.mark()
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*seeds, *_args(web, *extra)])
    wait_until(lambda: len(records(out)) >= count, 300, f"{count} records", crawl)
    return seeds, mark, out, crawl


def _assert_complete_and_polite(web: TestWeb, seeds: list[str], mark: int) -> dict[str, int]:
    """The crawl fetched exactly the reachable pages, politely, robots first; returns the duplicate counts."""
    entries = web.entries(since=mark)
    expected = web.model.expected_crawl(seeds)
    fetched = set(fetched_urls(entries))
    known = {url for url in fetched if web.model.is_known(url)}
    assert known == set(expected.fetched), (
        f"missing {sorted(set(expected.fetched) - known)[:10]}, unexpected {sorted(known - set(expected.fetched))[:10]}"
    )
    assert not fetched & set(expected.disallowed), "robots.txt disallowed pages were fetched"
    assert not fetched & set(expected.unavailable), "pages of a host whose robots.txt answers 503 were fetched"
    assert politeness_violations(entries, DELAY, web.model.crawl_delays()) == []
    assert robots_first_violations(entries) == []
    return duplicate_fetches(entries)


def test_crawl_fetches_every_reachable_page_once_politely(testweb: TestWeb, tmp_path: Path) -> None:
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*seeds, *_args(testweb)])
    assert crawl.wait(600) == 0, crawl.log()[-4000:]

    assert _assert_complete_and_polite(testweb, seeds, mark) == {}
    expected = testweb.model.expected_crawl(seeds)
    assert len(expected.fetched) > 1000  # a web of 200+ hosts, not a toy

    # Every fetched page is in the WARC exactly once, as warcio reads it.
    responses = warc_responses(out)
    uris = [uri for uri, _ in responses]
    assert len(uris) == len(set(uris))
    assert set(expected.fetched) <= set(uris)

    # One JSONL record per URL; disallowed URLs are recorded with their reason, not silently dropped.
    rows = records(out)
    urls = [row["url"] for row in rows]
    assert len(urls) == len(set(urls))
    by_url = {row["url"]: row for row in rows}
    for url in expected.disallowed:
        if url in by_url:
            assert by_url[url]["error"] == "robots"
    for url in expected.unavailable:
        if url in by_url:
            assert by_url[url]["error"] == "robots-unavailable"
    assert {row["error"] for row in rows if row["url"] in expected.fetched} <= {None, ""}

    counters = stats(out)["counters"]
    assert counters["queued"] == 0 and counters["inflight"] == 0
    assert counters["stored"] == len(rows)

    # Host sessions: a fetcher keeps a host for its next pages and sends them over the connection it has open
    # (the server sees one client port per connection), each after the host's delay (checked above).
    assert counters.get("session-leases", 0) > len(expected.fetched) // 2
    entries = testweb.entries(since=mark)
    connections = {(e.host, e.port, e.client_port) for e in entries}
    assert len(entries) >= 3 * len(connections), f"{len(entries)} requests over {len(connections)} connections"


def test_kill_9_of_the_whole_node_then_resume_loses_nothing(testweb: TestWeb, tmp_path: Path) -> None:
    seeds = testweb.seeds(3)
    mark = testweb.mark()
    out = tmp_path / "crawl"
    expected = testweb.model.expected_crawl(seeds)
    kill_after = random.Random(os.getpid()).randint(len(expected.fetched) // 10, len(expected.fetched) // 2)
    crawl = Crawl(out, [*seeds, *_args(testweb)])
    wait_until(lambda: len(records(out)) >= kill_after, 300, f"{kill_after} records", crawl)
    crawl.kill_node()

    resume = Crawl(out, _args(testweb), log_name="resume.log")
    assert resume.wait(600) == 0, resume.log()[-4000:]
    duplicates = _assert_complete_and_polite(testweb, seeds, mark)

    # Only URLs that were in flight at the kill may have been fetched twice: the resumed node took them back.
    found = re.search(r"took back (\d+) URLs", resume.log())
    taken_back = int(found.group(1)) if found else 0
    extra_fetches = sum(count - 1 for count in duplicates.values())
    assert extra_fetches <= taken_back, (extra_fetches, taken_back)
    _assert_one_record_a_page(out)  # fetched twice, stored once: the parsers' batch logs


def test_kill_9_of_the_supervisor_alone_ends_its_children_and_resume_loses_nothing(
    testweb: TestWeb, tmp_path: Path
) -> None:
    """``kill -9 PID`` of the node's own process, not its group: its fetchers and parsers must not go on as
    orphans, leasing and writing the out's files beside the node that resumes it."""
    seeds, mark, out, crawl = _crawl_until(testweb, tmp_path, 100)
    children = crawl.children()
    assert sorted(children) == ["fetcher-0", "fetcher-1", "parser-0"]
    os.kill(crawl.proc.pid, signal.SIGKILL)
    crawl.wait(30)
    try:
        wait_until(lambda: not any(_running(pid) for pid in children.values()), 60, "the children to end")
    finally:
        with contextlib.suppress(ProcessLookupError):  # orphans left (a failure): not to crawl on beside other tests
            os.killpg(crawl.proc.pid, signal.SIGKILL)

    resume = Crawl(out, _args(testweb), log_name="resume.log")
    assert resume.wait(600) == 0, resume.log()[-4000:]
    duplicates = _assert_complete_and_polite(testweb, seeds, mark)
    found = re.search(r"took back (\d+) URLs", resume.log())
    assert sum(count - 1 for count in duplicates.values()) <= (int(found.group(1)) if found else 0)
    _assert_one_record_a_page(out)


def test_kill_9_of_the_fork_server_restarts_the_children_without_two_of_a_kind_writing(
    testweb: TestWeb, tmp_path: Path
) -> None:
    """The supervisor learns of its children's exits through the fork server: killed, every child looks dead. The
    node starts new ones; the old ones, still running, must end rather than write the same files beside them."""
    seeds, mark, out, crawl = _crawl_until(testweb, tmp_path, 100)
    old = crawl.children()
    fork_server = _parent(old["parser-0"])
    assert fork_server != crawl.proc.pid and {_parent(pid) for pid in old.values()} == {fork_server}
    os.kill(fork_server, signal.SIGKILL)
    wait_until(lambda: not any(_running(pid) for pid in old.values()), 60, "the old children to end", crawl)
    assert crawl.wait(600) == 0, crawl.log()[-4000:]
    assert "restarting it" in crawl.log()
    _assert_complete_and_polite(testweb, seeds, mark)  # pages in flight at the kill may be fetched twice
    _assert_one_record_a_page(out)  # but stored once


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _running(pid: int) -> bool:
    """Alive and not a zombie (a dead child its fork server has not reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):  # gone before or while it was read
        return False
    return state != "Z"


def test_kill_9_of_one_fetcher_is_restarted_and_its_leases_re_leased(testweb: TestWeb, tmp_path: Path) -> None:
    seeds, mark, out, crawl = _crawl_until(testweb, tmp_path, 200, "--concurrency", "32")
    victim = crawl.children()["fetcher-0"]
    os.kill(victim, signal.SIGKILL)
    wait_until(lambda: crawl.children().get("fetcher-0") not in (None, victim), 60, "fetcher-0 restarted", crawl)
    assert crawl.wait(600) == 0, crawl.log()[-4000:]

    assert f"fetcher-0 (pid {victim}) died (killed by signal 9); restarting it" in crawl.log()
    duplicates = _assert_complete_and_polite(testweb, seeds, mark)

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


def _pages_since(web: TestWeb, mark: int) -> int:
    """Pages served since ``mark``, robots.txt files not counted: a burst of new hosts' robots.txt can come first,
    and a parser is handed pages only."""
    return sum(1 for entry in web.entries(since=mark) if not entry.path.startswith("/robots"))


def _queued_bytes(pid: int) -> int:
    """The most bytes waiting unread in one of the Unix sockets of process ``pid`` (``ss``'s Recv-Q)."""
    listing = subprocess.run(["ss", "-xpH"], capture_output=True, text=True, check=True).stdout
    mine = (line.split() for line in listing.splitlines() if f"pid={pid}," in line)
    return max((int(fields[2]) for fields in mine if fields[1] == "ESTAB"), default=0)


def test_kill_9_of_a_fetcher_while_its_parser_is_behind_leaves_one_record_a_page(
    testweb: TestWeb, tmp_path: Path
) -> None:
    """The dead fetcher's pages wait in the stopped parser (its socket, its batch) while the fetcher's next life
    starts: that life takes the dead one's leases back only once the parser has stored them, so none is fetched
    and recorded a second time."""
    seeds, mark, out, crawl = _crawl_until(testweb, tmp_path, 100, "--concurrency", "32")
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

    _assert_complete_and_polite(testweb, seeds, mark)
    urls = [row["url"] for row in records(out)]
    assert set(testweb.model.expected_crawl(seeds).fetched) <= set(urls)
    assert [url for url, n in Counter(urls).items() if n > 1] == []


def test_kill_9_of_a_parser_gives_the_pages_it_had_not_stored_back_at_once(testweb: TestWeb, tmp_path: Path) -> None:
    """The pages a parser dies with are fetched again as soon as it is gone, not after --process-ttl (600 s here,
    longer than the crawl is given to end): the fetchers take back those it had not confirmed as stored."""
    seeds, mark, out, crawl = _crawl_until(testweb, tmp_path, 100, "--concurrency", "32", "--process-ttl", "600")
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
    _assert_complete_and_polite(testweb, seeds, mark)
    assert set(testweb.model.expected_crawl(seeds).fetched) <= {row["url"] for row in records(out)}
    _assert_one_record_a_page(out)


def test_trawl_stop_out_drains_a_crawl_on_this_machine_and_a_resume_is_not_stopped_by_it(
    testweb: TestWeb, tmp_path: Path
) -> None:
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*testweb.seeds(3), *_args(testweb)])
    wait_until(lambda: len(records(out)) >= 50, 300, "50 records", crawl)
    asked = subprocess.run([*TRAWL, "stop", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert (asked.returncode, asked.stdout) == (0, f"asked the crawl in {out} to drain and exit\n"), asked.stderr
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    assert "stopping: trawl stop requested" in crawl.log()
    first = stats(out)["counters"]
    assert first["inflight"] == 0  # drained: nothing left leased
    assert first["queued"] > 0  # and stopped early

    # The stop asked of the first run is not heard again by the next one: it crawls until its own limit.
    resume = Crawl(out, [*_args(testweb), "--max-pages", str(first["fetched"] + 20)], log_name="resume.log")
    assert resume.wait(300) == 0, resume.log()[-4000:]
    assert "stopping: --max-pages" in resume.log()
    assert "trawl stop requested" not in resume.log()
    assert stats(out)["counters"]["fetched"] > first["fetched"]


def _assert_one_record_a_page(out: Path) -> None:
    urls = Counter(row["url"] for row in records(out))
    assert {url: n for url, n in urls.items() if n > 1} == {}
    responses = Counter(uri for uri, _ in warc_responses(out))
    assert {uri: n for uri, n in responses.items() if n > 1} == {}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "systemctl-stop"])
def test_a_stop_signal_to_the_whole_process_group_drains_cleanly_and_resume_continues(
    signum: signal.Signals, testweb: TestWeb, tmp_path: Path
) -> None:
    """Ctrl-C at a terminal, or 'systemctl stop' (SIGTERM to every process of the unit): the children leave the
    stop to the supervisor, which drains them."""
    seeds, mark, out, crawl = _crawl_until(testweb, tmp_path, 150)
    crawl.interrupt(signum)
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    first = stats(out)["counters"]
    assert first["inflight"] == 0  # drained: nothing left leased
    assert first["queued"] > 0  # and stopped early: there is work left to resume

    resume = Crawl(out, _args(testweb), log_name="resume.log")
    assert resume.wait(600) == 0, resume.log()[-4000:]
    # A clean drain hands over everything: no page is fetched twice, no record written twice.
    assert _assert_complete_and_polite(testweb, seeds, mark) == {}
    urls = [row["url"] for row in records(out)]
    assert len(urls) == len(set(urls))
