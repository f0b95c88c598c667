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
        raise missing_extra(
            exc, needed_by=needed_by, extra=extra, package=package or module.partition(".")[0], error=error
        ) from None


def missing_extra(
    exc: ImportError, *, needed_by: str, extra: str, package: str, error: type[InputError] = ConfigError
) -> InputError:
    """The error for a failed import of an optional dependency, for modules that import it by name (and keep its
    types)::

        try:
            import pymysql
        except ImportError as exc:
            raise missing_extra(exc, needed_by="the mysql sink", extra="mysql", package="PyMySQL") from None
    """
    return error(f"{needed_by} needs {package} (pip install 'webtrawl[{extra}]'): {_why(exc)}")


def _why(exc: ImportError) -> str:
    """The innermost "No module named ..." behind ``exc`` (libraries re-raise it with their own words), else the
    first line of ``exc``."""
    link: BaseException | None = exc
    found: BaseException = exc
    chain: set[int] = set()
    while link is not None and id(link) not in chain:
        chain.add(id(link))
        if isinstance(link, ModuleNotFoundError):
            found = link
        link = link.__cause__ or link.__context__
    return (str(found).strip().splitlines() or [type(found).__name__])[0]
