"""WARC writing speed: :class:`webtrawl.store.WarcWriter` on the 181 real corpus pages, in MB/s of payload.

Each page is written the way the parser writes it (request + response record, one gzip member each, the
payload as served: identity-encoded HTML, so the response record is compressed at level 1), into a temporary
directory. With ``--gzip`` the pages come gzip-encoded instead, as 85% of the realistic web's hosts send them
(``trawl bench --web realistic``): the record keeps the payload as it is, without compressing it again. Also
prints the raw gzip compressors available here on the same bytes, because compression is most of the cost.

    .venv/bin/python benchmarks/bench_warc.py [--rounds N] [--corpus DIR] [--gzip] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gzip
import hashlib
import pstats
import sys
import tempfile
import time
import zlib
from pathlib import Path
from types import ModuleType

from webtrawl.messages import Lease, Page
from webtrawl.store import WarcWriter

_DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def load_pages(corpus: Path, encoded: bool = False) -> list[Page]:
    """The corpus pages as a fetcher hands them over when the server sends identity HTML (like the test web), or
    with ``encoded`` gzip-encoded (level 6, as the realistic web's gzip hosts send them)."""
    pages = []
    for i, path in enumerate(sorted((corpus / "pages").glob("*.html.gz"))):
        body = gzip.decompress(path.read_bytes())
        coding = [("Content-Encoding", "gzip")] if encoded else []
        if encoded:
            body = gzip.compress(body, 6)
        url = f"https://site{i}.test/p/{i}.html"
        lease = Lease(token=f"bench/f0.0-{i}", shard=0, host=f"site{i}.test", url=url)
        pages.append(
            Page(
                lease=lease,
                status=200,
                reason="OK",
                headers=[
                    ("Content-Type", "text/html; charset=utf-8"),
                    ("Content-Length", str(len(body))),
                    ("Date", "Sat, 21 Nov 2026 12:00:00 GMT"),
                    ("Server", "bench"),
                    *coding,
                ],
                body=body,
                request_headers=[("Host", lease.host), ("User-Agent", "webtrawl/0.1"), ("Accept-Encoding", "gzip")],
                ip="127.0.0.1",
                fetch_time=time.time(),
                elapsed_ms=3.0,
            )
        )
    return pages


def run_round(pages: list[Page], directory: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, bytes written) for writing every page once."""
    writer = WarcWriter(directory, "bench", 1 << 40)
    # the parser hands the WARC writer its record, whose content hash (computed anyway) is the payload digest of an
    # identity body; of an encoded one it is the decoded body's, and the writer hashes the payload itself
    records = [{"status": 200, "content_hash": "sha1:" + hashlib.sha1(_decoded(page)).hexdigest()} for page in pages]
    wall, cpu = time.perf_counter(), time.process_time()
    for page, record in zip(pages, records, strict=True):
        writer.write(page, record)
    writer.flush()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    size = writer.current_path.stat().st_size if writer.current_path else 0
    writer.close()
    return wall, cpu, size


def _decoded(page: Page) -> bytes:
    return gzip.decompress(page.body) if ("Content-Encoding", "gzip") in page.headers else page.body


def _compressors() -> dict[str, tuple[ModuleType, int]]:
    found: dict[str, tuple[ModuleType, int]] = {"zlib level 1": (zlib, 1), "zlib level 6": (zlib, 6)}
    try:
        from isal import isal_zlib

        found["isal level 1"] = (isal_zlib, 1)
    except ImportError:
        pass
    try:
        from zlib_ng import zlib_ng

        found["zlib-ng level 1"] = (zlib_ng, 1)
    except ImportError:
        pass
    return found


def compressors(pages: list[Page]) -> None:
    bodies = [p.body for p in pages]
    mb = sum(map(len, bodies)) / 1e6
    for name, (module, level) in _compressors().items():
        cpu, out = time.process_time(), 0
        for body in bodies:
            z = module.compressobj(level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
            out += len(z.compress(body)) + len(z.flush())
        cpu = time.process_time() - cpu
        print(f"  {name:<16} {mb / cpu:6.0f} MB/s by CPU time, {mb * 1e6 / out:.2f}x smaller")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--corpus", type=Path, default=_DEFAULT_CORPUS)
    ap.add_argument("--gzip", action="store_true", help="gzip-encoded pages (see above)")
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    pages = load_pages(args.corpus, args.gzip)
    mb = sum(len(p.body) for p in pages) / 1e6
    with tempfile.TemporaryDirectory(prefix="bench-warc-") as tmp:
        run_round(pages, Path(tmp) / "warm")
        if args.profile:
            prof = cProfile.Profile()
            prof.enable()
            run_round(pages, Path(tmp) / "profile")
            prof.disable()
            pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(20)
            return 0
        best_cpu = best_wall = float("inf")
        size = 0
        for i in range(args.rounds):
            wall, cpu, size = run_round(pages, Path(tmp) / f"r{i}")
            best_cpu, best_wall = min(best_cpu, cpu), min(best_wall, wall)
    print(
        f"WarcWriter: {mb / best_cpu:.0f} MB/s of payload by CPU time ({1000 * best_cpu / len(pages):.2f} ms per "
        f"page), {mb / best_wall:.0f} MB/s wall; best of {args.rounds} rounds over {len(pages)} pages "
        f"({mb:.1f} MB {'gzip-encoded' if args.gzip else 'identity'} HTML -> {size / 1e6:.1f} MB .warc.gz)"
    )
    print("raw gzip compressors on the same payloads:")
    compressors(pages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
