"""CPU per page of the WARC sink code: each of the 181 corpus pages written as a request/response pair.

The pages and the writing are bench_warc.py's (identity HTML, the parser's content hash handed over as the
payload digest); here each round is a fresh process and rounds alternate between this tree and ``--baseline
REF`` (ABAB...), so a change is measured against its base under the same machine load. Prints medians of the ms
of CPU per page and the .warc.gz bytes per page::

    PYTHONPATH=src:testweb/src .venv/bin/python benchmarks/bench_warc_cost.py --rounds 9 --baseline main
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def _child() -> dict[str, float]:
    sys.path.insert(0, str(_HERE))
    from bench_warc import _DEFAULT_CORPUS, load_pages, run_round

    pages = load_pages(_DEFAULT_CORPUS)
    with tempfile.TemporaryDirectory(prefix="bench-warc-") as tmp:
        run_round(pages, Path(tmp) / "warm")
        _, cpu, size = run_round(pages, Path(tmp) / "timed")
    return {"ms CPU/page": cpu * 1000 / len(pages), "KB/page": size / 1000 / len(pages)}


def _show(name: str, medians: dict[str, float]) -> None:
    print(f"{name:>12}: " + ", ".join(f"{k} {v:.3f}" for k, v in medians.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", default="", help="git revision to alternate with (e.g. main)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child()))
        return 0
    sys.path.insert(0, str(_HERE))
    from _abab import run

    run(Path(__file__), args.baseline, args.rounds, [], _show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
