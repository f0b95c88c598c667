"""``--encrypt-to``: a crawl of the real test web, killed with kill -9 and resumed, leaves only age files in its
output directories; Debian's ``age -d`` decrypts each to what a plain crawl of the same web writes, and ``trawl
export``/``trawl try --warc`` read them with ``--identity``."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.node.crawlrun import Crawl, is_robots, records, wait_until, warc_responses
from tests.store.agekit import AgeKey, age_key
from webtrawl import CrawlResult
from webtrawl.store.recovery import journal_parts
from webtrawl_testweb import TestWeb

pytest.importorskip("pyrage", reason="the encrypt extra encrypts outputs")

STREAMS = ("warc", "records", "dropped", "logs", "pq", "js")


def _args(web: TestWeb, *extra: str) -> list[str]:
    return [*web.crawl_args(), "--delay", "0.05", "--fetchers", "1", "--parsers", "1", "--robots-retry", "0.2", *extra]


def _sinks(out: Path) -> list[str]:
    """A Parquet and a JSON copy of the page records (their files: encrypted too)."""
    return ["--records-to", f"parquet:{out / 'pq'}", "--records-to", f"json:{out / 'js' / 'pages.json'}"]


def _sink_urls(out: Path, key: AgeKey | None) -> tuple[set[str], set[str]]:
    """The URLs of the records in the crawl's Parquet files and in its JSON file (decrypted with ``key``)."""
    pq = pytest.importorskip("pyarrow.parquet", reason="the parquet extra writes Parquet files")
    tables = [pq.read_table(io.BytesIO(key.decrypt(p) if key else p.read_bytes())) for p in (out / "pq").iterdir()]
    arrays = [
        json.loads(key.decrypt(p) if key else p.read_bytes())
        for p in [*(out / "js").glob("*.json"), *(out / "js").glob("*.json.age")]
    ]
    return {url for t in tables for url in t.column("url").to_pylist()}, {r["url"] for a in arrays for r in a}


def _decrypted_records(key: AgeKey, out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in sorted((out / "records").iterdir()) for line in key.decrypt(path).splitlines()]


def _decrypted_responses(key: AgeKey, out: Path) -> set[tuple[str, int]]:
    found = set()
    for path in sorted((out / "warc").iterdir()):
        for record in ArchiveIterator(io.BytesIO(key.decrypt(path)), check_digests="raise"):
            if record.rec_type == "response" and not is_robots(record.rec_headers.get_header("WARC-Target-URI")):
                record.content_stream().read()
                found.add((record.rec_headers.get_header("WARC-Target-URI"), int(record.http_headers.get_statuscode())))
    return found


def _appends(out: Path) -> int:
    """Batches of records written to the open encrypted chunk (entries of its journal)."""
    return sum(len(journal_parts(path.read_bytes())) for path in (out / "records").glob("*.age.open"))


def test_an_encrypted_crawl_killed_and_resumed_decrypts_to_the_plain_crawl(testweb: TestWeb, tmp_path: Path) -> None:
    key = age_key(tmp_path / "age")
    seeds = testweb.seeds(2)
    plain = tmp_path / "plain"
    assert Crawl(plain, [*seeds, *_args(testweb, *_sinks(plain))]).wait(300) == 0
    secret = tmp_path / "secret"
    crawl = Crawl(secret, [*seeds, *_args(testweb, "--encrypt-to", key.recipient, *_sinks(secret))])
    wait_until(lambda: _appends(secret) >= 5, 300, "5 encrypted record batches", crawl)
    crawl.kill_node()
    resume = Crawl(secret, _args(testweb), log_name="resume.log")  # crawl.json keeps --encrypt-to
    assert resume.wait(300) == 0, resume.log()[-4000:]

    for stream in STREAMS:  # only whole age files: no plain file, nothing left open, no URL readable
        files = list((secret / stream).iterdir())
        assert files and all(path.name.endswith(".age") for path in files), files
        assert not any(b".test" in path.read_bytes() for path in files)
    recovered = [p.name for p in (secret / "records").iterdir() if re.search(r"-\d{5}-\d{5}\.jsonl\.age\Z", p.name)]
    assert recovered, "the chunk open at the kill: its appends became files of their own"
    rows = _decrypted_records(key, secret)
    fetched = {(r["url"], r["status"], r["content_hash"]) for r in rows}
    assert fetched == {(r["url"], r["status"], r["content_hash"]) for r in records(plain)}, "nothing lost"
    assert _decrypted_responses(key, secret) == set(warc_responses(plain))
    plain_urls = {r["url"] for r in records(plain)}
    assert _sink_urls(secret, key) == _sink_urls(plain, None) == (plain_urls, plain_urls)

    # The readers: with the key they read the encrypted crawl, without it they say what is missing in one line.
    base = [sys.executable, "-m", "webtrawl"]
    export = [*base, "export", "--out", str(secret), "--what", "records", "--to", f"jsonl:{tmp_path / 'rows'}"]
    missing = subprocess.run(export, capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and missing.stderr.startswith("trawl: error:") and "--identity" in missing.stderr
    done = subprocess.run([*export, "--identity", str(key.identity)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    exported = [json.loads(line) for path in (tmp_path / "rows").iterdir() for line in path.read_text().splitlines()]
    assert {r["url"] for r in exported} == {r["url"] for r in rows}
    api_rows = list(CrawlResult(secret).records(identity=key.identity))  # the Python API reads it the same way
    assert {r["url"] for r in api_rows} == {r["url"] for r in rows}
    warc = max((secret / "warc").iterdir(), key=lambda path: path.stat().st_size)
    tried = [*base, "try", "--text", "--warc", str(warc), "--identity", str(key.identity)]
    said = subprocess.run(tried, capture_output=True, text=True, timeout=120)
    assert said.returncode == 0, said.stderr
    # every response of the WARC: robots.txt answers too (archived, but they have no page record)
    tried_urls = {url for line in said.stdout.splitlines() if not is_robots(url := json.loads(line)["url"])}
    assert tried_urls and tried_urls <= {r["url"] for r in rows}
