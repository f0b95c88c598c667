"""``trawl bench`` end to end on a tiny test web: it must crawl, stop by itself and report every process kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from webtrawl.cli import main
from webtrawl_testweb import DEFAULT_CORPUS_DIR, Corpus


@pytest.fixture
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bench's --workdir, short: its Redis socket is 3 levels below it (at most 100 characters) and under
    pytest-xdist a test's tmp_path is one level (popen-gwN) deeper than alone."""
    return tmp_path_factory.mktemp("b")


def test_bench_crawls_for_a_fixed_time_and_reports_cpu_per_process_kind(tmp_path: Path, work: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["bench", "--web", "synthetic", "--hosts", "40", "--min-pages", "3", "--max-pages", "5", "--delay", "0.2"]
    argv += ["--warmup", "3", "--seconds", "4", "--runs", "1", "--json", str(out), "--workdir", str(work)]
    assert main(argv) == 0
    data = json.loads(out.read_text())
    (run,) = data["runs"]["0"]
    assert run["pages"] > 0
    assert {"fetcher", "parser", "supervisor", "redis", "testweb"} <= set(run["cpu_s"])
    assert run["cpu_s"]["fetcher"] > 0 and run["cpu_s"]["parser"] > 0
    assert run["redis_round_trips_per_page"] > 0
    assert run["peak_rss"]["fetcher"] > 0
    warc = sum(p.stat().st_size for p in (work / "p0-run0" / "out").rglob("*.warc.gz*"))
    assert 0 < run["warc_bytes"] <= warc and run["warc_kb_per_pair"] > 0  # the window's share of what was written
    assert data["machine"]["nproc"] >= 1
    assert run["probe_us"] > 0  # the machine's speed in the window: a number for every run (NaN fails this)


def test_bench_preload_queues_urls_that_are_never_fetched(tmp_path: Path, work: Path) -> None:
    out = tmp_path / "bench.json"
    argv = ["bench", "--web", "synthetic", "--hosts", "20", "--min-pages", "3", "--max-pages", "4", "--delay", "0.2"]
    argv += ["--preload", "3000"]
    argv += ["--warmup", "2", "--seconds", "3", "--runs", "1", "--json", str(out), "--workdir", str(work)]
    assert main(argv) == 0
    (run,) = json.loads(out.read_text())["runs"]["3000"]
    assert run["preloaded"] == 3000
    assert run["queued"] >= 3000
    records = list((work / "p3000-run0" / "out" / "records").glob("*.jsonl*"))
    assert records
    urls = [json.loads(line)["url"] for path in records for line in path.read_text().splitlines()]
    assert urls and not [u for u in urls if "://preload" in u]  # no preloaded host was ever ready


@pytest.mark.skipif(not len(Corpus(DEFAULT_CORPUS_DIR)), reason="the realistic web needs the corpus")
def test_bench_on_the_realistic_web_reports_robots_requests_and_faults(
    tmp_path: Path, work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench.json"
    argv = ["bench", "--web", "realistic", "--hosts", "300", "--seeds", "3", "--delay", "0.2", "--runs", "1"]
    # no warm-up: the window starts with the first request, before the crawl has met all 300 hosts (it meets
    # them within a few seconds, after which no robots.txt is left to fetch)
    argv += ["--warmup", "0", "--seconds", "6", "--json", str(out), "--workdir", str(work)]
    argv += ["--crawl-arg=--total=5"]  # a slow host's trickling body must not hold the stop for a minute
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "test web: realistic, 300 hosts (3 seeded)" in printed
    assert "robots.txt requests/page" in printed and "faults served in the window" in printed
    (run,) = json.loads(out.read_text())["runs"]["0"]
    assert run["pages"] > 0 and run["cpu_s"]["fetcher"] > 0 and run["cpu_s"]["parser"] > 0
    assert run["robots_requests"] > 0 and run["robots_requests_per_page"] > 0
    assert run["web_counts"].get("page", 0) > 0
    assert "served per 60 s: requests" in printed  # the window's mix next to the real web's figures
    mix = run["web_mix"]
    assert mix["requests"] > 0 and 0 < mix["robots_per_request"] < 1 and mix["body_mean_kb"] > 0
    records = list((work / "p0-run0" / "out" / "records").glob("*.jsonl*"))
    hosts = {json.loads(line)["url"].split("/")[2] for path in records for line in path.read_text().splitlines()}
    assert len(hosts) > 3  # hosts beyond the seeds were found through links
