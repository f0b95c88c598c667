"""benchmarks/soak.py's parts that need no hour: the samplers on this process, the slope and the report."""

from __future__ import annotations

import csv
import importlib.util
import os
from pathlib import Path
from types import ModuleType

import pytest

_SOAK = Path(__file__).resolve().parents[2] / "benchmarks" / "soak.py"


@pytest.fixture(scope="module")
def soak() -> ModuleType:
    spec = importlib.util.spec_from_file_location("soak", _SOAK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_samplers_see_this_process_memory_and_a_file_it_opens(soak: ModuleType, tmp_path: Path) -> None:
    rss, pss = soak.memory(os.getpid())
    assert rss > 0 and pss > 0
    before = soak.open_fds(os.getpid())
    with (tmp_path / "f").open("w"):
        assert soak.open_fds(os.getpid()) == before + 1


def test_the_samplers_say_so_for_a_process_that_is_gone(soak: ModuleType) -> None:
    gone = 2**22 + 1  # above the kernel's pid_max ceiling: never a live process
    assert soak.open_fds(gone) == -1
    assert soak.memory(gone) == (0, 0)


def test_the_slope_is_per_hour(soak: ModuleType) -> None:
    assert soak.slope_per_hour([0.0, 1800.0, 3600.0], [10.0, 15.0, 20.0]) == pytest.approx(10.0)
    assert soak.slope_per_hour([0.0], [1.0]) == 0.0


def test_the_report_prints_every_metric_and_writes_the_plot(
    soak: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "soak.csv"
    columns = [c for c, _, _ in soak.SUMMARY] + ["t_s", "utc", "queued_k"]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for i in range(5):
            writer.writerow({c: 100 + i for c in columns} | {"t_s": 60 * i, "utc": "00:00:00"})
    soak.report(path, 1.0, tmp_path / "soak.png", "test")
    out = capsys.readouterr().out
    assert all(c in out for c, _, _ in soak.SUMMARY)
    assert (tmp_path / "soak.png").read_bytes().startswith(b"\x89PNG")
