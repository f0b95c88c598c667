"""What ``import webtrawl`` costs (issue 19): wall time over a bare interpreter, modules loaded, and the same for
``webtrawl.Crawler`` (the first attribute access loads the API).

Each snippet runs in a fresh interpreter ``--runs`` times, alternating with ``python -c pass`` so a busy machine
slows both alike; the cost is the median of (snippet - pass) over the pairs, in ms of wall time. The module count
is ``len(sys.modules)`` after the snippet minus that of a bare interpreter; ``-X importtime``'s largest cumulative
entries name what dominates.

    PYTHONPATH=src python benchmarks/bench_import.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

_SNIPPETS = {
    "pass": "pass",
    "import webtrawl": "import webtrawl",
    "webtrawl.Crawler": "import webtrawl; webtrawl.Crawler",
}


def _wall(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return 1000 * (time.perf_counter() - start)


def _modules(code: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys; print(len(sys.modules))"], check=True, capture_output=True
    )
    return int(out.stdout)


def _top_imports(code: str, count: int) -> list[tuple[int, str]]:
    """The ``count`` largest cumulative times (us) of ``-X importtime`` (a package includes its imports)."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", code], check=True, capture_output=True).stderr
    rows = []
    for line in err.decode().splitlines()[1:]:
        _, cumulative, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        rows.append((int(cumulative), name))
    return sorted(rows, reverse=True)[:count]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args(argv)
    times: dict[str, list[float]] = {name: [] for name in _SNIPPETS}
    for _ in range(args.runs):
        for name, code in _SNIPPETS.items():
            times[name].append(_wall(code))
    bare = _modules("pass")
    for name, code in _SNIPPETS.items():
        if name == "pass":
            print(
                f"python -c pass: {statistics.median(times[name]):.1f} ms wall (median of {args.runs}), {bare} modules"
            )
            continue
        over = [t - p for t, p in zip(times[name], times["pass"], strict=True)]
        print(
            f"{name}: +{statistics.median(over):.1f} ms wall over pass (median of {args.runs}, range "
            f"{min(over):.1f}-{max(over):.1f}), +{_modules(code) - bare} modules"
        )
        for cumulative, module in _top_imports(code, 5):
            print(f"    {cumulative / 1000:7.1f} ms cumulative  {module.strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
