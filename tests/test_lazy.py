"""Lazy package exports (webtrawl.lazy): a name loads from its module on first use, and a module that fails to
import says why (an installed library too old for a call we make at import time was reported as "cannot import
name 'ParseContext'", with the library's AttributeError lost)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "lazypkg"
    root.mkdir()
    (root / "__init__.py").write_text(
        "from webtrawl.lazy import lazy_exports\n"
        "__getattr__ = lazy_exports(__name__, {'Good': 'lazypkg.good', 'Broken': 'lazypkg.broken'})\n"
    )
    (root / "good.py").write_text("Good = 'good'\n")
    (root / "broken.py").write_text("import types\nBroken = types.SimpleNamespace().create_node\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield root
    for name in [n for n in sys.modules if n == "lazypkg" or n.startswith("lazypkg.")]:
        del sys.modules[name]


def test_a_name_loads_from_its_module_and_an_unknown_name_is_no_attribute(package: Path) -> None:
    from lazypkg import Good  # type: ignore[import-not-found]

    assert Good == "good"
    with pytest.raises(ImportError, match="cannot import name 'Missing'"):
        from lazypkg import Missing  # type: ignore[import-not-found]  # noqa: F401


def test_a_module_failing_with_attribute_error_names_the_real_error(package: Path) -> None:
    with pytest.raises(ImportError, match=r"importing lazypkg\.broken for lazypkg\.Broken: .*create_node") as caught:
        from lazypkg import Broken  # type: ignore[import-not-found]  # noqa: F401
    assert isinstance(caught.value.__cause__, AttributeError)
