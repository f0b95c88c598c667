"""The crawler ships without its test web and benchmark: those are the separate distribution webtrawl-testweb
(./testweb), so installing webtrawl pulls neither their code nor their dependencies (trustme)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import _assert_one_line_error

_NOT_RUNTIME = {"webtrawl_testweb", "webtrawl_bench", "trustme"}

_IMPORT_ALL = """
import importlib, pkgutil, sys
import webtrawl
for info in pkgutil.walk_packages(webtrawl.__path__, "webtrawl."):
    if not info.name.endswith(".__main__"):
        importlib.import_module(info.name)
print(" ".join(sorted({name.split(".")[0] for name in sys.modules})))
"""

# Runs ``trawl ARGS`` as if webtrawl-testweb were not installed: a None entry makes its import fail.
_WITHOUT_TESTWEB = """
import sys
sys.modules["webtrawl_testweb"] = None
sys.modules["webtrawl_bench"] = None
from webtrawl.cli import main
raise SystemExit(main())
"""


def test_no_runtime_module_imports_the_test_web_or_its_dependencies() -> None:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_ALL], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split())
    assert "webtrawl" in loaded
    assert not loaded & _NOT_RUNTIME


def _trawl_without_testweb(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT_TESTWEB, *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    "args", [["testweb"], ["testweb", "--hosts", "5", "--chaos"], ["bench"], ["bench", "--seconds", "1"]]
)
def test_testweb_and_bench_without_their_package_say_what_to_install(args: list[str]) -> None:
    result = _trawl_without_testweb(*args)
    _assert_one_line_error(result, 2, f"trawl {args[0]} needs the webtrawl-testweb package (pip install ./testweb")


def test_a_crawl_directory_named_testweb_does_not_need_the_package(tmp_path: Path) -> None:
    (tmp_path / "testweb").mkdir()
    result = _trawl_without_testweb("stats", "--out", "testweb", cwd=tmp_path)
    _assert_one_line_error(result, 2, "holds no crawl")
