"""A missing optional dependency is one line naming what needs it, the extra to install and the module that is
really missing, even when an installed package fails for want of one of its own dependencies (trafilatura 2 with
lxml 6 and no lxml_html_clean: issue 19)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import _assert_one_line_error
from webtrawl.errors import ConfigError, InputError
from webtrawl.optional import optional_import

# Runs ``trawl ARGS`` with one module made missing, as in a virtualenv where it was never installed.
_WITHOUT = """
import importlib.abc, sys
missing = sys.argv.pop(1)
class _Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == missing or name.startswith(missing + "."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _Missing())
from webtrawl.cli import main
raise SystemExit(main())
"""


def _trawl_without(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, module, *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_text_without_lxml_html_clean_names_it(tmp_path: Path) -> None:
    """What a user of pip 23 got from ``pip install 'webtrawl[text]'`` before the extra pulled lxml_html_clean in."""
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>Hello</p></body></html>")
    result = _trawl_without("lxml_html_clean", "try", "--text", str(page))
    _assert_one_line_error(
        result, 2, "--text needs trafilatura (pip install 'webtrawl[text]'): No module named 'lxml_html_clean'"
    )


def test_text_without_trafilatura_names_it(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<html><body><p>Hello</p></body></html>")
    result = _trawl_without("trafilatura", "try", "--text", str(page))
    _assert_one_line_error(result, 2, "(pip install 'webtrawl[text]'): No module named 'trafilatura'")


def test_a_dependency_reraised_in_other_words_is_found_behind_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "wrapper_pkg.py").write_text(
        "try:\n    import surely_not_installed_xyz\n"
        "except ImportError:\n    raise ImportError('wrapper needs another project.\\nInstall it.') from None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as info:
        optional_import("wrapper_pkg", needed_by="the wrapper sink", extra="wrap")
    assert str(info.value) == (
        "the wrapper sink needs wrapper_pkg (pip install 'webtrawl[wrap]'): No module named 'surely_not_installed_xyz'"
    )


def test_other_import_errors_give_their_first_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "broken_pkg.py").write_text("raise ImportError('libfoo.so.1: cannot open shared object\\nmore')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InputError, match=r"^x needs broken-dist \(pip install 'webtrawl\[b\]'\): libfoo.so.1: cannot"):
        optional_import("broken_pkg", needed_by="x", extra="b", package="broken-dist", error=InputError)


def test_an_installed_module_is_returned() -> None:
    assert optional_import("json", needed_by="x", extra="y").dumps([1]) == "[1]"
