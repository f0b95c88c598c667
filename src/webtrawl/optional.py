"""Optional dependencies (the extras ``text``, ``render``, ``parquet``, ...), imported where first used, so that a
crawl that does not use one never loads it.

A failed import is reported as one line that names what needs it, the extra that installs it and the module that
is really missing: "--text needs trafilatura (pip install 'webtrawl[text]'): No module named 'lxml_html_clean'".
The last part matters because a package that *is* installed can fail to import for want of one of its own
dependencies (trafilatura 2 with lxml 6 without ``lxml_html_clean``), and "install trafilatura" would then be wrong.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from webtrawl.errors import ConfigError, InputError


def optional_import(
    module: str, *, needed_by: str, extra: str, package: str = "", error: type[InputError] = ConfigError
) -> ModuleType:
    """Import ``module`` of the extra ``extra`` (``package``: the distribution's name, default the module's top
    name); if that fails, raise ``error`` saying ``needed_by`` needs it and why the import failed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        name = package or module.partition(".")[0]
        raise error(f"{needed_by} needs {name} (pip install 'webtrawl[{extra}]'): {_why(exc)}") from None


def _why(exc: ImportError) -> str:
    """The innermost "No module named ..." behind ``exc`` (libraries re-raise it with their own words), else the
    first line of ``exc``."""
    seen: BaseException | None = exc
    found: BaseException = exc
    while seen is not None:
        if isinstance(seen, ModuleNotFoundError):
            found = seen
        seen = seen.__cause__ or seen.__context__
    return (str(found).strip().splitlines() or [type(found).__name__])[0]
