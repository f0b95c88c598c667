"""Alternating A/B rounds of a single-process micro-benchmark, each round in a fresh child process.

``--baseline REF`` extracts ``src/`` of git revision REF into a temporary directory; the rounds then alternate
between this worktree's code (A) and REF's (B) by putting one or the other first on ``PYTHONPATH`` (ABAB...), so
both see the same machine load. Each child prints one JSON object of per-page CPU times; the parent prints their
medians. Used by bench_warc_cost.py and bench_add_cost.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

_REPO = Path(__file__).resolve().parents[1]


def extract_src(ref: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(_REPO), "archive", ref, "src"], check=True, capture_output=True).stdout
    path = into / "archive.tar"
    path.write_bytes(archive)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _child(src: Path, script: Path, args: list[str]) -> dict[str, float]:
    env = dict(os.environ)
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != _REPO / "src"]
    env["PYTHONPATH"] = os.pathsep.join([str(src), *rest])
    out = subprocess.run([sys.executable, str(script), "--child", *args], env=env, check=True, capture_output=True)
    return dict(json.loads(out.stdout.decode().strip().splitlines()[-1]))


def run(
    script: Path, baseline: str, rounds: int, args: list[str], show: Callable[[str, dict[str, float]], None]
) -> None:
    """``rounds`` children of this tree's code alternating with ``rounds`` of ``baseline``'s (if given)."""
    with tempfile.TemporaryDirectory(prefix="abab-") as tmp:
        variants = {"this tree": _REPO / "src"}
        if baseline:
            variants[baseline] = extract_src(baseline, Path(tmp))
        results: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, src in variants.items():
                results[name].append(_child(src, script, args))
        for name, rows in results.items():
            show(name, {key: statistics.median(row[key] for row in rows) for key in rows[0]})


def main(
    script: Path,
    doc: str | None,
    child: Callable[[], dict[str, float]],
    argv: list[str] | None,
    digits: int = 3,
    flags: dict[str, str] | None = None,
) -> int:
    """The command line of a benchmark: ``--rounds``, ``--baseline``, and ``flags`` (name -> help) that are handed
    to every child round as given (the child reads them from ``sys.argv``)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", default="", help="git revision to alternate with (e.g. main)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    for flag, text in (flags or {}).items():
        ap.add_argument(flag, action="store_true", help=text)
    args = ap.parse_args(argv)
    given = [flag for flag in flags or {} if getattr(args, flag.lstrip("-").replace("-", "_"))]
    if args.child:
        print(json.dumps(child()))
        return 0

    def show(name: str, medians: dict[str, float]) -> None:
        print(f"{name:>12}: " + ", ".join(f"{k} {v:.{digits}f}" for k, v in medians.items()))

    run(script, args.baseline, args.rounds, given, show)
    return 0
