"""CPU per page of the WARC sink code: each of the 181 corpus pages written as a request/response pair.

The pages and the writing are bench_warc.py's (identity HTML, the parser's content hash handed over as the
payload digest; with ``--gzip`` gzip-encoded pages, as most of the realistic web's); here each round is a fresh
process and rounds alternate between this tree and ``--baseline REF`` (ABAB...), so a change is measured against
its base under the same machine load. Prints medians of the ms of CPU per page and the .warc.gz bytes per page::

    PYTHONPATH=src:testweb/src .venv/bin/python benchmarks/bench_warc_cost.py --rounds 9 --baseline main [--gzip]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _child() -> dict[str, float]:
    sys.path.insert(0, str(_HERE))
    from bench_warc import _DEFAULT_CORPUS, load_pages, run_round

    pages = load_pages(_DEFAULT_CORPUS, "--gzip" in sys.argv)
    with tempfile.TemporaryDirectory(prefix="bench-warc-") as tmp:
        run_round(pages, Path(tmp) / "warm")
        _, cpu, size = run_round(pages, Path(tmp) / "timed")
    return {"ms CPU/page": cpu * 1000 / len(pages), "KB/page": size / 1000 / len(pages)}


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(_HERE))
    import _abab

    return _abab.main(Path(__file__), __doc__, _child, argv, flags={"--gzip": "gzip-encoded pages (bench_warc.py)"})


if __name__ == "__main__":
    raise SystemExit(main())
