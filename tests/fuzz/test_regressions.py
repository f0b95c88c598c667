"""Every input the fuzzers ever tripped on (``fuzz/regressions/<harness>/``) and every seed of their corpora
(``fuzz/corpus/<harness>/``) replayed through the same harness functions, so the suite keeps them fixed.

A ``.gz`` input is stored compressed (a hang's input is big and repetitive). The hangs kept here took minutes to
an hour before their fix and take milliseconds after it: the per-test timeout (like libFuzzer's ``-timeout``) is
what catches them coming back."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from fuzz.targets import HARNESSES

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"
INPUTS = sorted(
    (kind, path.parent.name, path)
    for kind in ("regressions", "corpus")
    for path in (FUZZ / kind).glob("*/*")
    if path.is_file() and path.suffix != ".txt"
)


def test_every_saved_input_has_a_harness() -> None:
    assert INPUTS, "no fuzz inputs found"
    assert {name for _, name, _ in INPUTS} <= set(HARNESSES)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("kind", "harness", "path"), INPUTS, ids=[f"{k}/{h}/{p.name[:32]}" for k, h, p in INPUTS])
def test_saved_input_passes_its_harness(kind: str, harness: str, path: Path) -> None:
    data = path.read_bytes()
    HARNESSES[harness](gzip.decompress(data) if path.suffix == ".gz" else data)
