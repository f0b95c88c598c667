"""The stages' imports follow the data flow (frontier -> fetch -> parse/extract -> store -> frontier): a stage never
loads one downstream of it, the option table and the config load no stage, and the shared formats every stage uses
(:mod:`webtrawl.formats`) load none. Read from the source with ``ast``: an import inside a function or under
``TYPE_CHECKING`` counts as much as one at the top of a module, and so does a module the rule's own modules name by a
string (``"webtrawl.parse.process:process_page"``, ``importlib.import_module``). The rules hold for what a module
loads through other modules too: options.py importing a neutral module that imports a stage breaks them. Through
other modules only what loading them loads is followed: not their ``TYPE_CHECKING`` imports, nor their strings (a
package's lazy exports, :mod:`webtrawl.lazy`, load only when asked for)."""

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


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the import statements under ``if TYPE_CHECKING:`` (never run)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            found |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    return found


def _edges(path: Path, modules: set[str]) -> Iterator[tuple[str, bool]]:
    """(module, loaded) for every module ``path`` imports anywhere in it (``from a import b``: ``a.b`` if that is one
    of ``modules``, else ``a``). Not loaded: imported under ``TYPE_CHECKING``, or named by a string."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    type_only = _type_only(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, id(node) not in type_only) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                module = f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                yield module, id(node) not in type_only
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _NAMED.fullmatch(node.value):
            yield node.value.partition(":")[0], False


def _graphs() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Each module's imports that load a module, and those that do not (type-only imports, strings)."""
    paths = sorted(_ROOT.rglob("*.py"))
    modules = {_module_name(path) for path in paths}
    imports: dict[str, set[str]] = {}
    named: dict[str, set[str]] = {}
    for path in paths:
        edges = list(_edges(path, modules))
        imports[_module_name(path)] = {module for module, loaded in edges if loaded}
        named[_module_name(path)] = {module for module, loaded in edges if not loaded}
    return imports, named


IMPORTS, NAMED = _graphs()


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _violations(importers: str, forbidden: tuple[str, ...]) -> list[str]:
    """``a -> b -> c -> bad`` for each way a module ``a`` of ``importers`` (a package or module) imports a
    forbidden module, itself or through other modules of webtrawl (``b``, ``c``)."""

    def bad(module: str) -> bool:
        return any(_within(module, package) for package in forbidden)

    own = [module for module in IMPORTS if _within(module, importers)]
    by: dict[str, str | None] = dict.fromkeys(own)  # reached module -> the module it was reached from
    todo = list(own)
    while todo:  # not into forbidden modules: each way in is reported once, where it enters
        module = todo.pop()
        for imported in sorted(IMPORTS[module]):
            if imported in IMPORTS and imported not in by and not bad(imported):
                by[imported] = module
                todo.append(imported)

    def chain(module: str) -> str:
        links = [module]
        while (before := by[links[-1]]) is not None:
            links.append(before)
        return " -> ".join(reversed(links))

    found = set()
    for module in by:
        imported = IMPORTS[module] | (NAMED[module] if module in own else set())
        found |= {f"{chain(module)} -> {i}" for i in imported if bad(i)}
    return sorted(found)


def test_the_graph_sees_imports_in_functions_relative_imports_and_named_modules() -> None:
    """The walk itself: what the rules below rely on it to find."""
    assert "webtrawl.parse.process" in NAMED["webtrawl.parse"]  # a lazy export, named by a string
    assert "webtrawl.node.supervisor" in IMPORTS["webtrawl.cli"]  # imported inside a function
    assert "webtrawl.fetch.route" in NAMED["webtrawl.fetch.args"]  # under TYPE_CHECKING
    assert len(IMPORTS) > 100
    through = _violations("webtrawl.parse.recrawl", ("webtrawl.formats.route",))
    assert through == ["webtrawl.parse.recrawl -> webtrawl.formats.recrawl -> webtrawl.formats.route"]


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
    assert any(_within(module, importers) for module in IMPORTS), f"{importers} is gone: update the rule"
    assert _violations(importers, forbidden) == []


def test_the_crawler_does_not_import_its_test_web_or_benchmark() -> None:
    """Those are another distribution (./testweb): ``trawl testweb`` and ``trawl bench`` are its plug-in commands,
    found through entry points (:mod:`webtrawl.cliplugins`), and say what to install when it is missing
    (tests/test_packaging.py). No module of the crawler names them, not even the command line's."""
    assert _violations("webtrawl", ("webtrawl_testweb", "webtrawl_bench")) == []
