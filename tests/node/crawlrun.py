"""Running the real ``trawl crawl`` as a subprocess, and reading what it left behind."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import termios
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator

from webtrawl_testweb import (
    TestWeb,
    duplicate_fetches,
    fetched_urls,
    politeness_violations,
    robots_first_violations,
)
from webtrawl_testweb.accesslog import LogEntry


class Crawl:
    """One ``trawl crawl`` (or ``node``) process group, in its own session like a terminal job, logging to a file;
    or, given ``terminal`` (the tty end of a pty), with that tty as its controlling terminal and its output."""

    def __init__(
        self, out: Path, args: list[str], log_name: str = "crawl.log", command: str = "crawl", terminal: int = -1
    ) -> None:
        self.out = out
        out.parent.mkdir(parents=True, exist_ok=True)
        self.log_path = out.parent / f"{out.name}-{log_name}"
        cmd = [sys.executable, "-m", "webtrawl", command, *args, "--out", str(out), "--progress", "log"]
        self._log = self.log_path.open("ab")
        if terminal < 0:
            self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        else:  # the new session's leader takes the tty as its controlling terminal: a hang-up signals the node
            self.proc = subprocess.Popen(
                cmd,
                stdin=terminal,
                stdout=terminal,
                stderr=terminal,
                start_new_session=True,
                preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0),
            )

    def wait(self, timeout: float = 300) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.flush()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def children(self) -> dict[str, int]:
        path = self.out / "children.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def interrupt(self, signum: int = signal.SIGINT) -> None:
        """Ctrl-C at a terminal: SIGINT to the whole foreground process group (or another signal to all of it)."""
        os.killpg(self.proc.pid, signum)

    def kill_node(self) -> None:
        """kill -9 of everything the node runs: the process group and the embedded Redis server."""
        pidfile = self.out / "redis" / "redis.pid"
        redis_pid = int(pidfile.read_text().strip()) if pidfile.exists() else None
        os.killpg(self.proc.pid, signal.SIGKILL)
        if redis_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(redis_pid, signal.SIGKILL)
        self.proc.wait(30)
        _wait_gone(redis_pid)


def running(pid: int) -> bool:
    """Alive and not a zombie (a dead child its fork server has not reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):  # gone before or while it was read
        return False
    return state != "Z"


def _wait_gone(pid: int | None) -> None:
    if pid is not None:
        wait_until(lambda: not running(pid), 30, f"process {pid} to die")


def wait_until(condition: Callable[[], bool], timeout: float, what: str, crawl: Crawl | None = None) -> None:
    """Poll an observable condition (not a fixed sleep); fail with the crawl's log if it never comes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if crawl is not None and crawl.proc.poll() is not None:
            raise AssertionError(f"crawl exited ({crawl.proc.returncode}) before {what}:\n{crawl.log()[-4000:]}")
        time.sleep(0.05)
    tail = crawl.log()[-4000:] if crawl is not None else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def records(out: Path, stream: str = "records") -> list[dict[str, Any]]:
    """All JSONL records of a crawl (sealed and open chunks), or the rows of another JSONL stream (``items``). A
    line a parser is still writing (no newline yet) is not a record yet: polling while the crawl runs would
    otherwise read half a line."""
    rows = []
    for path in sorted((out / stream).glob("*.jsonl*")):
        for line in path.read_text().split("\n")[:-1]:
            if line.strip():
                rows.append(json.loads(line))
    return rows


ROBOTS_PATHS = ("/robots.txt", "/robots-real.txt")  # robots-real.txt: where a ROBOTS_REDIRECT host sends it


def is_robots(uri: str) -> bool:
    """Whether ``uri`` is a robots.txt of the test web (archived at each fetch, not once a page)."""
    return urlsplit(uri).path in ROBOTS_PATHS


def warc_responses(out: Path) -> list[tuple[str, int]]:
    """(target URI, HTTP status) of every response record of a page (the robots.txt answers left out: see
    test_archive_crawl.py), read with warcio, which checks every record's block and payload digest (a mismatch
    raises)."""
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz*")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream, check_digests="raise"):
                if record.rec_type == "response":
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    if is_robots(uri):
                        record.content_stream().read()
                        continue
                    status = int(record.http_headers.get_statuscode())
                    record.content_stream().read()
                    found.append((uri, status))
    return found


def stats(out: Path) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "webtrawl", "stats", "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def dashboard_status(port: int) -> dict[str, Any]:
    """The dashboard's ``/api/status`` on 127.0.0.1:``port``; empty while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=5) as resp:
            doc: dict[str, Any] = json.loads(resp.read())
            return doc
    except OSError:
        return {}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def quick_args(web: Any) -> list[str]:
    """A small node (one fetcher, one parser) with short timeouts and back-offs, so a crawl of the chaos web ends
    in seconds: what the operating tests (alerts, dashboard, ETA) need, not what test_chaos_crawl checks."""
    return [
        *web.crawl_args(),
        *("--delay", "0.25", "--fetchers", "1", "--parsers", "1", "--concurrency", "64"),
        *("--connect", "2", "--total", "3", "--robots", "2", "--robots-retry", "0.2", "--robots-give-up", "3"),
        *("--max-retries", "1", "--backoff-base", "0.2", "--backoff-max", "2", "--host-budget", "40"),
    ]


def polite_crawl(web: TestWeb, out: Path, *args: str, delay: float, resumed: bool = False) -> list[LogEntry]:
    """A crawl with one fetcher and one parser: the test web's access log entries of it, checked for politeness
    (and robots.txt first, unless ``resumed``: a resumed crawl has its robots.txt in Redis already)."""
    mark = web.mark()
    crawl = Crawl(out, [*args, *web.crawl_args(), "--delay", str(delay), "--fetchers", "1", "--parsers", "1"])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    entries = web.entries(since=mark)
    assert politeness_violations(entries, delay) == []
    if not resumed:
        assert robots_first_violations(entries) == []
    return entries


DELAY = 0.5  # the end-to-end crawls' --delay, against which their politeness is checked


def node_args(web: TestWeb, *extra: str) -> list[str]:
    """The end-to-end tests' node: two fetchers, one parser, a short delay and robots.txt retry, and ``extra``."""
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


def crawl_until(web: TestWeb, tmp_path: Path, count: int, *extra: str) -> tuple[list[str], int, Path, Crawl]:
    """A crawl of three seeds, running, once it has stored ``count`` records: its seeds, the test web's log mark
    before it, its out and the crawl."""
    seeds = web.seeds(3)
    mark = web.mark()
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*seeds, *node_args(web, *extra)])
    wait_until(lambda: len(records(out)) >= count, 300, f"{count} records", crawl)
    return seeds, mark, out, crawl


def assert_complete_and_polite(web: TestWeb, seeds: list[str], mark: int) -> dict[str, int]:
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


def assert_one_record_a_page(out: Path) -> None:
    urls = Counter(row["url"] for row in records(out))
    assert {url: n for url, n in urls.items() if n > 1} == {}
    responses = Counter(uri for uri, _ in warc_responses(out))
    assert {uri: n for uri, n in responses.items() if n > 1} == {}


def taken_back(log: str) -> int:
    """How many URLs a resumed node took back from the crashed run before it (0 if it logged none)."""
    found = re.search(r"took back (\d+) URLs", log)
    return int(found.group(1)) if found else 0


def resume_to_the_end(web: TestWeb, out: Path, seeds: list[str], mark: int) -> None:
    """Resume the crawl in ``out`` after a crash and check its end: complete and polite, only pages in flight at the
    crash (the resumed node took them back) fetched twice, and stored once all the same."""
    resume = Crawl(out, node_args(web), log_name="resume.log")
    assert resume.wait(600) == 0, resume.log()[-4000:]
    duplicates = assert_complete_and_polite(web, seeds, mark)
    assert sum(count - 1 for count in duplicates.values()) <= taken_back(resume.log())
    assert_one_record_a_page(out)  # fetched twice, stored once: the parsers' batch logs


@contextlib.contextmanager
def stopped_at_end(crawl: Crawl) -> Iterator[Crawl]:
    """The crawl, killed if the test fails before it ended (a failed test must not leave a node running)."""
    try:
        yield crawl
    finally:
        if crawl.proc.poll() is None:
            crawl.kill_node()


def node_logs(out: Path) -> str:
    """Every log file the node's processes wrote under ``<out>/logs``."""
    return "".join(path.read_text(errors="replace") for path in sorted((out / "logs").glob("*.log*")))
