"""Operating a real crawl: alerts fire on the hostile web and stay quiet on the good one, JSON log files rotate
under the crawl directory, and the ETA of a bounded crawl counts down to its end (read from the dashboard's JSON)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.node.crawlrun import Crawl, free_port, node_args, quick_args, records
from webtrawl.metrics.report import format_bytes
from webtrawl_testweb import TestWeb

ALERT_FLAGS = ("--alert-window", "3", "--alert-min-urls", "5", "--alert-error-rate", "0.1", "--alert-disk-free", "0")


def _hook(tmp_path: Path) -> str:
    """A shell hook that records the variables and the JSON it is given (what a webhook's curl would send)."""
    names, docs = tmp_path / "alert-names.txt", tmp_path / "alerts.jsonl"
    fields = '"$TRAWL_ALERT_NAME" "$TRAWL_ALERT_STATE" "$TRAWL_ALERT_NODE"'
    return f'printf "%s %s %s\\n" {fields} >> {shlex.quote(str(names))}; cat >> {shlex.quote(str(docs))}'


def test_alerts_fire_on_the_chaos_web_as_log_lines_and_hook_runs(chaos_web: TestWeb, tmp_path: Path) -> None:
    assert chaos_web.chaos is not None
    out = tmp_path / "crawl"
    args = [*chaos_web.seeds(2), chaos_web.chaos.hub, *quick_args(chaos_web), *ALERT_FLAGS]
    args += ["--alert-memory", "1MiB", "--alert-redis-memory", "1KiB", "--alert-stall", "0"]
    args += ["--alert-cmd", _hook(tmp_path), "--log-format", "json", "--node-id", "chaos-node"]
    # 512 B: the alert lines the test requires (and the stop line) always pass it, however short the crawl
    args += ["--log-max-bytes", "512", "--log-backups", "50"]
    crawl = Crawl(out, args)
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert "Traceback" not in log

    # one WARNING line per alert, as JSON objects (the format a log shipper reads), on stderr and in the log file
    def alert_lines(text: str) -> list[dict[str, Any]]:
        rows = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
        return [r for r in rows if r["logger"] == "webtrawl.alerts" and r["level"] == "WARNING"]

    fired = {row["msg"].split(":")[0] for row in alert_lines(log)}
    assert {"alert error-rate", "alert memory", "alert redis-memory"} <= fired
    # the log file rotates by size: trawl.log, trawl.log.1 (newer) ... read oldest first, nothing lost or doubled
    logs = out / "logs"
    rotated = sorted(logs.glob("trawl.log.*"), key=lambda p: -int(p.suffix[1:]))
    assert rotated and all(p.stat().st_size <= 512 for p in rotated)
    in_file = alert_lines("".join(p.read_text() for p in [*rotated, logs / "trawl.log"]))
    assert [r["msg"] for r in in_file] == [r["msg"] for r in alert_lines(log)]
    assert all(r["node"] == "chaos-node" for r in in_file)
    assert {p.name for p in logs.glob("*.log")} == {"fetcher-0.log", "parser-0.log", "trawl.log"}
    error_rate = next(r for r in alert_lines(log) if r["msg"].startswith("alert error-rate"))
    assert "failed (threshold 10%)" in error_rate["msg"]

    # the hook: once per firing (and once per resolution), variables and the same alert as JSON on stdin
    hooked = [line.split() for line in (tmp_path / "alert-names.txt").read_text().splitlines()]
    docs = [json.loads(line) for line in (tmp_path / "alerts.jsonl").read_text().splitlines()]
    assert len(hooked) == len(docs) and ["error-rate", "firing", "chaos-node"] in hooked
    firing = [d for d in docs if d["state"] == "firing"]
    assert {d["name"] for d in firing} == {row["msg"].split(":")[0].removeprefix("alert ") for row in alert_lines(log)}
    error_doc = next(d for d in firing if d["name"] == "error-rate")
    assert error_doc["value"] > error_doc["threshold"] == 0.1 and error_doc["node"] == "chaos-node"


def test_alerts_stay_quiet_on_the_good_web(testweb: TestWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    args = [*testweb.seeds(3), *quick_args(testweb), *ALERT_FLAGS, "--alert-cmd", _hook(tmp_path)]
    crawl = Crawl(out, args)
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert "Traceback" not in log and "stopping: finished" in log
    assert " alert " not in log and "alert " not in (out / "logs" / "trawl.log").read_text()
    assert not (tmp_path / "alerts.jsonl").exists()

    # a crawl of its own: trawl stats --host explains a host from the stopped crawl's state
    host = records(out)[0]["url"].split("/")[2].split(":")[0]
    result = subprocess.run(
        [sys.executable, "-m", "webtrawl", "stats", "--out", str(out), "--host", host.upper()],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.startswith(f"host {host}\n") and "  queued: 0\n" in result.stdout
    assert "  - nothing is queued for this host: it is done unless new links to it are found" in result.stdout


def test_a_bounded_crawl_counts_its_progress_and_eta_down_to_the_end(testweb: TestWeb, tmp_path: Path) -> None:
    max_pages = 60
    port = free_port()
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*testweb.seeds(3), *quick_args(testweb), "--max-pages", str(max_pages), "--ui-port", str(port)])
    docs: list[dict[str, Any]] = []
    while crawl.proc.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=5) as resp:
                doc = json.loads(resp.read())
        except OSError:
            doc = {}
        if doc.get("at"):
            docs.append(doc)
        time.sleep(0.5)
    assert crawl.wait() == 0, crawl.log()[-4000:]
    progress = [d["progress"] for d in docs if d["counters"].get("fetched")]
    assert len(progress) >= 3, crawl.log()[-3000:]
    for doc in docs:
        # "done": pages the --max-pages budget has used, as the node counts them for its stop (robots.txt too)
        p = doc["progress"]
        assert p["basis"] == "max-pages" and p["total"] == max_pages
        # a fetcher counts a page ended once its release's reply is read, after Redis counted it fetched: a poll
        # between the two sees it fetched and not yet done (CI once: 19 done, 20 fetched), never more than in flight
        counters = doc["counters"]
        assert p["done"] + counters.get("inflight", 0) >= counters.get("fetched", 0)
        assert p["fraction"] == min(1.0, p["done"] / max_pages)
        rate = doc["rates"]["pages_s"]
        if rate > 0:  # the ETA is what is left at the current rate
            assert p["eta_s"] == max(0, max_pages - p["done"]) / rate
    fractions = [p["fraction"] for p in progress]
    assert fractions == sorted(fractions)  # the last poll may come before the final state: the log has that
    assert any(p["eta_s"] for p in progress)  # an ETA was shown while crawling, not only "-"
    # the log lines carry it too; the last one is the final state
    lines = [line for line in crawl.log().splitlines() if " fetched=" in line]
    assert "progress=100.0%(max-pages) eta=0s" in lines[-1]
    assert "success=" in lines[-1] and "written=" in lines[-1]
    downloaded = sum(row["bytes"] or 0 for row in records(out))
    assert downloaded > 0 and f"downloaded={format_bytes(downloaded)} " in lines[-1]


def test_log_format_json_makes_every_line_on_the_terminal_json(testweb: TestWeb, tmp_path: Path) -> None:
    """A log shipper reading the node's stdout and stderr with --log-format json gets JSON objects only: the
    progress lines (--progress log, as without a terminal) are INFO records of webtrawl.progress."""
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*testweb.seeds(2), *node_args(testweb), "--max-pages", "20", "--log-format", "json"])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    lines = [line for line in crawl.log().splitlines() if line.strip()]
    not_json = [line for line in lines if not line.startswith("{")]
    assert not_json == []
    rows = [json.loads(line) for line in lines]
    progress = [row for row in rows if row["logger"] == "webtrawl.progress"]
    assert progress and progress[-1]["msg"].endswith("state=stopped") and progress[-1]["level"] == "INFO"
    assert "stored=20 " in progress[-1]["msg"]
