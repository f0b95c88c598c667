"""Package exports loaded on first use (PEP 562), so that a process importing one light module of a stage does not
pay for the whole stage: the supervisor names the fetch and parse stages but runs neither (they run in children
forked from a server that imports them, node/children.py)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A package's ``__getattr__``: each public name from its module (``where``: name -> module), imported when first
    asked for. Names not in ``where`` are not attributes, so ``from package import submodule`` still works."""

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            loaded = importlib.import_module(module)
        except AttributeError as exc:  # `from package import name` would report it as "cannot import name", hiding it
            raise ImportError(f"importing {module} for {package}.{name}: {exc}") from exc
        return getattr(loaded, name)

    return __getattr__
