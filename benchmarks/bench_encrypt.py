"""Encryption at rest (``--encrypt-to``): the CPU it adds per MB written, for WARC, JSONL, Parquet and JSON output.

The same writes go through a plain writer and through one encrypting to an age X25519 recipient (pyrage): the
WARC writer on the 181 real corpus pages (one append per page, as the parser writes them), the JSONL writer on page
records in batches of 20 (one append per batch), and the ``parquet:`` and ``json:`` sinks on the same records and
batches (MB: of the plain file, so Parquet's are its compressed bytes; per 1,000 rows too). Encryption's cost is
the difference in process CPU time, per MB of file written (the plaintext: the .warc.gz bytes, the JSONL bytes).
An encrypted file is encrypted twice (each append as a part, the whole file when sealed); the raw pyrage cost of
one pass and of one small age file are printed too.

    .venv/bin/python benchmarks/bench_encrypt.py [--rounds N] [--corpus DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyrage
from bench_warc import _DEFAULT_CORPUS, load_pages

from webtrawl.messages import Page
from webtrawl.store import JsonlWriter, SinkContext, WarcWriter
from webtrawl.store.registry import open_sink
from webtrawl.store.sinks.rows import Rows


def _warc(pages: list[Page], keys: list[Any]) -> Callable[[Path], int]:
    def run(directory: Path) -> int:
        writer = WarcWriter(directory, "bench", 1 << 40, keys)
        for page in pages:
            writer.write_pair(page)
        writer.close()
        return _plain_bytes(directory, keys)

    return run


def _jsonl(rows: list[dict[str, Any]], keys: list[Any]) -> Callable[[Path], int]:
    def run(directory: Path) -> int:
        writer = JsonlWriter(directory, "bench", 1 << 30, keys)
        for start in range(0, len(rows), 20):
            writer.write_some(rows[start : start + 20])
        writer.close()
        return _plain_bytes(directory, keys)

    return run


def _sink(scheme: str, rows: list[dict[str, Any]], keys: list[Any]) -> Callable[[Path], int]:
    def run(directory: Path) -> int:
        target = directory if scheme == "parquet" else directory / "rows.json"
        ctx = SinkContext(directory, "bench", "bench", 1 << 30, encrypt_to=tuple(str(k) for k in keys))
        sink: Any = open_sink(f"{scheme}:{target}", "records", ctx)
        for start in range(0, len(rows), 20):
            batch = rows[start : start + 20]
            sink.write_rows(Rows([row["url"] for row in batch], batch))
        sink.close()
        return sum(p.stat().st_size for p in directory.iterdir() if p.is_file()) if not keys else -1

    return run


def _plain_bytes(directory: Path, keys: list[Any]) -> int:
    return sum(p.stat().st_size for p in directory.iterdir()) if not keys else -1


def _best_cpu(run: Callable[[Path], int], rounds: int, tmp: Path, tag: str) -> tuple[float, int]:
    best, size = float("inf"), 0
    for i in range(rounds + 1):  # the first round warms up
        cpu = time.process_time()
        got = run(tmp / f"{tag}{i}")
        cpu = time.process_time() - cpu
        size = got if got >= 0 else size
        if i:
            best = min(best, cpu)
    return best, size


def _records(n: int) -> list[dict[str, Any]]:
    return [
        {"url": f"https://site{i % 500}.test/p/{i}.html", "final_url": f"https://site{i % 500}.test/p/{i}.html",
         "status": 200, "content_type": "text/html", "bytes": 48_000 + i, "fetch_time": "2026-11-26T01:00:00.000Z",
         "elapsed_ms": 12.5, "depth": i % 7, "title": f"Page {i} of a site about something", "outlinks": 40,
         "content_hash": "sha1:" + f"{i:040x}", "encoding": "utf-8", "error": None, "ip": "127.0.0.1"}
        for i in range(n)
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--corpus", type=Path, default=_DEFAULT_CORPUS)
    args = ap.parse_args(argv)
    keys = [pyrage.x25519.Identity.generate().to_public()]
    pages, rows = load_pages(args.corpus), _records(20_000)
    with tempfile.TemporaryDirectory(prefix="bench-encrypt-") as tmp:
        for name, plain, secret, appends in [
            ("WARC", _warc(pages, []), _warc(pages, keys), len(pages)),
            ("JSONL", _jsonl(rows, []), _jsonl(rows, keys), len(rows) // 20),
            ("Parquet", _sink("parquet", rows, []), _sink("parquet", rows, keys), len(rows) // 20),
            ("JSON", _sink("json", rows, []), _sink("json", rows, keys), len(rows) // 20),
        ]:
            cpu_plain, size = _best_cpu(plain, args.rounds, Path(tmp), name + "p")
            cpu_secret, _ = _best_cpu(secret, args.rounds, Path(tmp), name + "s")
            mb = size / 1e6
            extra = cpu_secret - cpu_plain
            print(
                f"{name}: {mb:.1f} MB in {appends} appends: plain {1000 * cpu_plain / mb:.2f} ms CPU/MB, encrypted "
                f"{1000 * cpu_secret / mb:.2f} ms CPU/MB: encryption adds {1000 * extra / mb:.2f} ms CPU per MB "
                f"({100 * extra / cpu_plain:.0f}% of writing it plain); best of {args.rounds} rounds"
            )
            if name != "WARC":
                per_k = 1e6 / len(rows)  # s -> ms per 1,000 rows
                print(f"  per 1,000 rows: plain {cpu_plain * per_k:.1f} ms CPU, encryption adds {extra * per_k:.1f} ms")
    blob = bytes(range(256)) * (32 << 12)  # 32 MiB
    cpu = time.process_time()
    pyrage.encrypt(blob, keys)
    cpu = time.process_time() - cpu
    print(f"pyrage.encrypt, one pass over 32 MiB: {1000 * cpu / (len(blob) / 1e6):.2f} ms CPU per MB")
    cpu = time.process_time()
    for _ in range(2000):
        pyrage.encrypt(b"x" * 1000, keys)
    print(f"pyrage.encrypt of a 1 KB age file (X25519 header): {1e6 * (time.process_time() - cpu) / 2000:.0f} us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
