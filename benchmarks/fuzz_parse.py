"""Fuzz the parse step (``process_page``) with mutated corpus and chaos pages for as long as you like.

    .venv/bin/python benchmarks/fuzz_parse.py [--seconds 600] [--seed N]

Prints the number of cases per second; exits non-zero with the failing case's seed on the first exception
(replay it with ``--seed`` and the same case number: the cases are deterministic).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.parse import fuzzing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    started = time.monotonic()

    def progress(n: int) -> None:
        if n % 5000 == 0:
            print(f"{n} cases, {n / (time.monotonic() - started):.0f}/s", flush=True)

    try:
        cases = fuzzing.run(args.seconds, args.seed, on_case=progress)
    except AssertionError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"seed {args.seed}: {cases} cases in {time.monotonic() - started:.0f}s, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
