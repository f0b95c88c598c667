"""kill -9 of a process writing to every sink, then a resume that writes the unconfirmed batch again.

SQLite and PostgreSQL end with exactly one row per item; CSV and Parquet files are whole (a torn tail is cut when
the sink opens again) and hold every item of every confirmed batch.
"""

from __future__ import annotations

import csv
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg
import pyarrow.parquet as pq

from tests.store.sinkwriter import ITEMS, PAGES

ROOT = Path(__file__).resolve().parents[2]


def _run(start: int, end: int, urls: list[str], out: Path) -> subprocess.Popen[str]:
    """The writer, with ``out`` as its crawl's output directory."""
    cmd = [sys.executable, "-m", "tests.store.sinkwriter", str(start), str(end), *urls]
    env = {**os.environ, "SINKWRITER_OUT": str(out)}
    return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)


def kill_after(urls: list[str], batches: int, out: Path) -> int:
    """Start a writer, kill -9 it once ``batches`` batches are confirmed; the last confirmed batch."""
    proc = _run(0, 10_000, urls, out)
    assert proc.stdout is not None
    confirmed = -1
    for line in proc.stdout:
        confirmed = int(line.split()[1])
        if confirmed >= batches:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    # what it confirmed between the line read above and the kill (a loaded machine let it run two batches on): a
    # resume writes again from the batch after the last confirmed one, as a crawl's resume goes on from its marks
    for line in proc.stdout:
        confirmed = int(line.split()[1])
    return confirmed


def test_kill_mid_write_and_resume_leave_one_row_per_item(tmp_path: Path, pg_url: str) -> None:
    urls = [f"sqlite:///{tmp_path}/k.db", pg_url + "?table=k", f"csv:{tmp_path}/csv", f"parquet:{tmp_path}/pq"]
    confirmed = kill_after(urls, 40, tmp_path)
    resumed = _run(confirmed + 1, confirmed + 11, urls, tmp_path)
    assert resumed.wait(120) == 0
    last = confirmed + 10
    expected = {(f"http://k.test/{b}-{j}", i) for b in range(last + 1) for j in range(PAGES) for i in range(ITEMS)}

    with sqlite3.connect(tmp_path / "k.db") as conn:
        lite = conn.execute("SELECT url, idx FROM items").fetchall()
    with psycopg.connect(pg_url) as pg:
        rows = pg.execute("SELECT url, idx FROM k").fetchall()
    for found in (lite, rows):
        counts = Counter(found)
        assert set(counts) == expected and max(counts.values()) == 1

    csv_rows: list[tuple[str, int]] = []
    for path in sorted((tmp_path / "csv").glob("*.csv*")):
        assert path.suffix == ".csv", "every file sealed"
        with path.open(newline="") as fh:
            csv_rows += [(r["url"], int(r["idx"])) for r in csv.DictReader(fh)]
    parquet_rows: list[tuple[str, int]] = []
    for path in sorted((tmp_path / "pq").glob("*.parquet*")):
        assert path.suffix == ".parquet", "every file sealed"
        parquet_rows += [(r["url"], r["idx"]) for r in pq.read_table(path, columns=["url", "idx"]).to_pylist()]
    in_flight = {f"http://k.test/{confirmed + 1}-{j}" for j in range(PAGES)}
    for found in (csv_rows, parquet_rows):
        counts = Counter(found)
        assert set(counts) == expected  # nothing lost, no half row
        assert {url for (url, _), n in counts.items() if n > 1} <= in_flight  # a double only where it was in flight
