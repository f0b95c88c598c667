"""Run one harness of :mod:`fuzz.targets` under atheris (coverage-guided, libFuzzer).

``python fuzz/driver.py NAME [libFuzzer options] [CORPUS_DIR ...]``; the ``fuzz_<name>.py`` files are shortcuts
that also add ``fuzz/corpus/<name>`` as seeds. Crashes are written where ``-artifact_prefix`` says.
"""

from __future__ import annotations

import hashlib
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import atheris

ROOT = Path(__file__).resolve().parents[1]


def _keep_going(name: str, harness: Callable[[bytes], None], findings: Path) -> Callable[[bytes], None]:
    """With ``FUZZ_FINDINGS=DIR``: save the first input of each distinct failure (exception type and the frame
    it came from) under DIR/<name>/ with its traceback, and go on fuzzing; a time-boxed run then finds them all."""
    seen: set[str] = set()
    folder = findings / name
    folder.mkdir(parents=True, exist_ok=True)

    def run(data: bytes) -> None:
        try:
            harness(data)
        except Exception as exc:
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            key = hashlib.sha1(f"{type(exc).__name__}:{frame.filename}:{frame.lineno}".encode()).hexdigest()[:12]
            if key not in seen:
                seen.add(key)
                (folder / key).write_bytes(data)
                (folder / f"{key}.txt").write_text("".join(traceback.format_exception(exc)))

    return run


def main(name: str, argv: list[str]) -> None:
    for extra in (ROOT, ROOT / "src"):
        if str(extra) not in sys.path:
            sys.path.insert(0, str(extra))
    with atheris.instrument_imports(include=["webtrawl"]):
        from fuzz.targets import HARNESSES
    seeds = ROOT / "fuzz" / "corpus" / name
    # -merge=1 and -fork run argv[0] as a command: FUZZ_ARGV0 names an executable wrapper (python + this script)
    args = [os.environ.get("FUZZ_ARGV0", argv[0]), *argv[1:]]
    if seeds.is_dir():
        args.append(str(seeds))
    harness = HARNESSES[name]
    findings = os.environ.get("FUZZ_FINDINGS")
    atheris.Setup(args, _keep_going(name, harness, Path(findings)) if findings else harness)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv[1], [sys.argv[0], *sys.argv[2:]])
