"""politeness/ is a leaf stage: fetch/ uses it, so it must not import fetch/ or parse/ (parse/ imports fetch/)."""

from __future__ import annotations

import ast
from pathlib import Path

import webtrawl.politeness

FORBIDDEN = ("webtrawl.fetch", "webtrawl.parse")


def test_politeness_imports_no_other_stage() -> None:
    package = Path(webtrawl.politeness.__file__).parent
    found = []
    for source in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text(), str(source))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{source.name}: {n}" for n in names if n.startswith(FORBIDDEN)]
    assert len(list(package.glob("*.py"))) >= 4
    assert found == []
