"""setuptools' build backend, plus the build's one optional step: with ``WEBTRAWL_COMPILE=1`` the parser's hot
modules are compiled by mypyc from the same type-checked source (benchmarks/RESULTS.md has what it saves). Without
it the package is pure Python and nothing here changes the build.

mypyc type-checks what it compiles, so a compiled build asks pip's isolated build environment for mypy and the
project's own dependencies (their types decide the compiled code); a plain build needs neither. ``make compile``
builds the same modules in place (setup.py).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from setuptools import build_meta as _meta
from setuptools.build_meta import *  # noqa: F403  (the rest of the PEP 517 hooks, unchanged)

ENV = "WEBTRAWL_COMPILE"
# Not compiled: parse/batch.py (a test patches its globals, which compiled code has bound), politeness/ (mypyc classes
# take no weak references, which the matcher cache needs, and robots.py's stored rules no longer decode) and the
# fetcher's modules (no gain measured: a fetcher's time is in aiohttp, uvloop and OpenSSL).
COMPILED = [
    "formats/canonical.py",
    "formats/encoding.py",
    "parse/links.py",
    "parse/traps.py",
    "parse/html.py",
    "parse/process.py",
    "parse/scope.py",
    "frontier/adding.py",
    "frontier/recent.py",
    "frontier/keys.py",
    "store/warc.py",
    "decompress.py",
]
_ROOT = Path(__file__).resolve().parents[1]
# setuptools runs setup.py while it collects the build's requirements too, before they (mypy) are installed
_collecting = False


def _compiling() -> bool:
    return os.environ.get(ENV) == "1"


def ext_modules() -> list[Any]:
    """setup()'s extension modules: the compiled ones, or none."""
    if not _compiling() or _collecting:
        return []
    from mypyc.build import mypycify

    # the modules they import are only type-checked for their types (silent): the optional extras' libraries that
    # some of those import need not be in the build environment
    paths = [f"src/webtrawl/{module}" for module in COMPILED]
    return list(mypycify(["--follow-imports=silent", *paths], opt_level="3"))


def _compile_requires() -> list[str]:
    if not _compiling():
        return []
    project = tomllib.loads((_ROOT / "pyproject.toml").read_text())["project"]
    return ["mypy>=1.10", *project["dependencies"]]


def _requires(hook: Callable[[dict[str, Any] | None], list[str]], config_settings: dict[str, Any] | None) -> list[str]:
    global _collecting
    _collecting = True
    try:
        return [*hook(config_settings), *_compile_requires()]
    finally:
        _collecting = False


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires(_meta.get_requires_for_build_wheel, config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    return _requires(_meta.get_requires_for_build_editable, config_settings)
