"""What a :class:`~webtrawl.api.Crawler` runs on each page, as the crawl option that names it.

The crawler's parsers are separate processes (forks of a fresh fork server, not of the caller): they import the
user's code by name (``module:QualName``), never receive it pickled. So a target must be importable by name from a
fresh interpreter:

* a ``Spider`` subclass -> ``spider = "module:QualName"``; a function or an extractor class ->
  ``extract = "module:qualname"``; a string or path (a rules file, ``module:function`` or ``file.py:function``) ->
  ``extract``, as ``--extract`` takes it;
* code defined in the script being run is named by the script's file (``/path/shop.py:Shop``, as ``--spider`` takes
  it, so a resume from the command line finds it too) or, under ``python -m``, its module. A spawned child runs the
  script again anyway (as ``__mp_main__``: multiprocessing's own rule), so the script must start its crawl under
  ``if __name__ == "__main__":``, or every child would start a crawl of its own. That is checked before anything
  starts (:func:`check_main_guard`), and again in a child should the check have missed it;
* code typed into a notebook or a REPL has no file a child could run: one clear error.
"""

from __future__ import annotations

import ast
import multiprocessing
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from webtrawl.errors import ConfigError

_GUARD_HINT = 'start the crawl under  if __name__ == "__main__":  (the crawler\'s processes import your script)'


def target_options(target: object) -> dict[str, str]:
    """The crawl option (``extract`` or ``spider``) naming ``target``; ``{}`` for None (a crawl that only archives)."""
    if target is None:
        return {}
    if isinstance(target, str | Path):
        return {"extract": str(target)}
    if isinstance(target, type):
        from webtrawl.extract.spider import Spider

        if issubclass(target, Spider):
            return {"spider": _import_name(target)}
        if not callable(getattr(target, "extract", None)):
            raise ConfigError(
                f"{target.__qualname__} is neither a webtrawl.Spider subclass nor an extractor (a class with an "
                "extract(doc) method)"
            )
        return {"extract": _import_name(target)}
    if callable(target) and hasattr(target, "__qualname__"):
        return {"extract": _import_name(target)}
    raise ConfigError(
        f"cannot crawl with a {type(target).__name__}: give a Spider subclass, a function, "
        "a 'module:function' string or a rules file (.toml)"
    )


def _import_name(obj: Any) -> str:
    """``module:QualName`` of a class or function, checked to be what a spawned process will find under it."""
    module, qualname = getattr(obj, "__module__", None), obj.__qualname__
    if "<locals>" in qualname or "<lambda>" in qualname or "." in qualname:
        raise ConfigError(
            f"{qualname} must be defined at the top level of a module: the crawler's processes import it by name"
        )
    if module is None or sys.modules.get(module) is None or getattr(sys.modules[module], qualname, None) is not obj:
        raise ConfigError(
            f"{qualname} cannot be imported as {module}:{qualname}: define it at the top level of a module"
        )
    if module == "__main__":
        module = _main_import_name(qualname)
    return f"{module}:{qualname}"


def _main_import_name(qualname: str) -> str:
    """What the script being run is imported as elsewhere: its module name (``python -m pkg.script``) or its file
    (``python script.py``; a resume from the command line finds it there too)."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if isinstance(name, str) and name != "__main__":
        return name
    path = _main_file()
    if path is None:
        raise ConfigError(
            f"{qualname} is defined in an interactive session (a notebook or a REPL), which the crawler's processes "
            f"cannot import: put it in a .py file and import it from there"
        )
    if not path.endswith(".py"):
        return "__main__"  # a script without .py is not importable from its file; a child's __mp_main__ is it
    return str(Path(path).resolve())


def _main_file() -> str | None:
    """The file of the running script, if ``__main__`` is one (not a notebook, REPL or ``python -c``)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path if isinstance(path, str) and Path(path).is_file() else None


def _rerun_main_file() -> str | None:
    """The script file a spawned child runs again, by multiprocessing's rule: not a package's ``__main__``
    (``python -m package``), which it leaves alone."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None and (name == "__main__" or name.endswith(".__main__")):
        return None
    return _main_file()


def check_not_reimported() -> None:
    """In a crawler process being started, the script that started the crawl is imported again (multiprocessing's
    ``spawn``); a crawl at its top level would run again there. Stop that with the reason instead of recursing."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise ConfigError(f"a crawler process imported the script that started the crawl: {_GUARD_HINT}")


def check_main_guard() -> None:
    """Before a crawl starts from a script: the statement of the script that is running now must be under the
    ``__main__`` guard (a spawned child would run any other statement again). Scripts that are not files, and
    crawls started from a thread or a function the guard protects, pass."""
    path = _rerun_main_file()
    frame = _main_module_frame()
    if path is None or frame is None:
        return
    try:
        tree = ast.parse(Path(path).read_bytes(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return  # cannot tell: the check in the child (check_not_reimported) still stops a recursion
    line = frame.f_lineno
    for statement in tree.body:
        end = statement.end_lineno or statement.lineno
        if statement.lineno <= line <= end:
            if not _is_main_guard(statement):
                raise ConfigError(f"{path}:{line}: {_GUARD_HINT}")
            return


def _main_module_frame() -> FrameType | None:
    """The frame running the ``__main__`` script's module-level code on this thread's stack, if any."""
    main = sys.modules.get("__main__")
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and main is not None and frame.f_globals is vars(main):
            return frame
        frame = frame.f_back  # type: ignore[assignment]
    return None


def _is_main_guard(statement: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either side)."""
    if not isinstance(statement, ast.If) or not isinstance(statement.test, ast.Compare):
        return False
    test = statement.test
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, *test.comparators]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    mains = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(mains) == 1
