"""The stages' imports follow the data flow (frontier -> fetch -> parse/extract -> store -> frontier): a stage never
imports one downstream of it, the option table imports no stage, and the shared formats every stage uses
(:mod:`webtrawl.formats`) import none. Read from the source with ``ast``, so an import inside a function, under
``TYPE_CHECKING`` or named by a string (``"webtrawl.parse.process:process_page"``, ``importlib.import_module``)
counts as much as one at the top of a module."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import webtrawl

_ROOT = Path(webtrawl.__file__).parent
STAGES = ("frontier", "fetch", "politeness", "parse", "extract", "store", "node", "metrics")
_NAMED = re.compile(r"webtrawl(?:_testweb|_bench)?(?:\.\w+)*(?::[\w.]+)?")  # a module (or object) named by a string


def _module_name(path: Path) -> str:
    parts = path.relative_to(_ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> Iterator[str]:
    """Every module ``path`` imports, anywhere in it (``from a import b``: ``a.b`` if that is one of ``modules``)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAMED.fullmatch(node.value):
            yield node.value.partition(":")[0]


def _graph() -> dict[str, set[str]]:
    paths = sorted(_ROOT.rglob("*.py"))
    modules = {_module_name(path) for path in paths}
    return {_module_name(path): set(_imports(path, modules)) for path in paths}


GRAPH = _graph()


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _violations(importers: str, forbidden: tuple[str, ...]) -> list[str]:
    """``importer -> imported`` for each module in ``importers`` (a package or module) importing a forbidden one."""
    found = set()
    for module, imported in GRAPH.items():
        if _within(module, importers):
            found |= {f"{module} -> {i}" for i in imported for bad in forbidden if _within(i, bad)}
    return sorted(found)


def test_the_graph_sees_imports_in_functions_relative_imports_and_named_modules() -> None:
    """The walk itself: what the rules below rely on it to find."""
    assert "webtrawl.parse.process" in GRAPH["webtrawl.parse"]  # a lazy export, named by a string
    assert "webtrawl.node.supervisor" in GRAPH["webtrawl.cli"]  # imported inside a function
    assert len(GRAPH) > 100


@pytest.mark.parametrize(
    ("importers", "forbidden"),
    [
        # fetch runs before parse and extract: it hands them pages, it never calls them
        ("webtrawl.fetch", ("webtrawl.parse", "webtrawl.extract")),
        # store writes what parse and extract made; the formats it shares with them live in webtrawl.formats
        ("webtrawl.store", ("webtrawl.parse", "webtrawl.extract")),
        # politeness reads and matches robots.txt for the fetcher: a leaf
        ("webtrawl.politeness", tuple(f"webtrawl.{s}" for s in STAGES if s != "politeness")),
        # the option table and the config are read by every stage and by the front door, which loads no stage
        ("webtrawl.options", tuple(f"webtrawl.{s}" for s in STAGES)),
        ("webtrawl.config", tuple(f"webtrawl.{s}" for s in STAGES)),
        # what every stage may import imports no stage
        ("webtrawl.formats", tuple(f"webtrawl.{s}" for s in STAGES)),
    ],
)
def test_stages_import_along_the_data_flow(importers: str, forbidden: tuple[str, ...]) -> None:
    assert any(_within(module, importers) for module in GRAPH), f"{importers} is gone: update the rule"
    assert _violations(importers, forbidden) == []


def test_the_crawler_does_not_import_its_test_web_or_benchmark() -> None:
    """Those are another distribution (./testweb); only the ``trawl testweb`` and ``trawl bench`` commands load them,
    when installed, and say what to install when not (tests/test_packaging.py)."""
    found = [
        violation
        for violation in _violations("webtrawl", ("webtrawl_testweb", "webtrawl_bench"))
        if not violation.startswith("webtrawl.cli -> ")
    ]
    assert found == []
