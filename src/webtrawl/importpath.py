"""User code named by import path: ``package.module:Name`` or ``path/to/file.py:Name``.

Sinks (``--items-to mypkg.sinks:MongoSink?uri=...``), extractors (``--extract mypkg:Shop``), fetchers
(``--fetcher mypkg:Fetcher``) and extraction callbacks are named this way and imported in the process that runs
them (a spawned parser or fetcher cannot receive an object, only its name). The working directory is on the import
path, as it is for ``python -m``; ``__main__`` is the running script (in a spawned child, the script re-run as
``__mp_main__`` by multiprocessing). A top-level module: every stage and the supervisor's start-up checks use it.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import re
import sys
import traceback
from pathlib import Path
from typing import Any

from webtrawl.errors import ConfigError, InputError

# module path (dots) or a .py file, a colon, an identifier
_SPEC_RE = re.compile(r"^(?:[A-Za-z_][\w.]*|.+\.py):[A-Za-z_]\w*$")


def is_import_path(spec: str) -> bool:
    """Whether ``spec`` has the form ``package.module:Name`` or ``file.py:Name``."""
    return bool(_SPEC_RE.match(spec))


def load_object(spec: str, flag: str, noun: str = "code") -> Any:
    """The object ``spec`` names; :class:`InputError` naming ``flag`` and ``spec`` (and the user's file and line
    where the import failed) otherwise."""
    target, _, name = spec.rpartition(":")
    if not target or not name.isidentifier():
        raise InputError(f"{flag} {spec}: want package.module:Name or file.py:Name")
    module = import_module(target, spec, flag, noun)
    found = getattr(module, name, None)
    if found is None:
        raise InputError(f"{flag} {spec}: {target} has no {name!r}")
    return found


def import_module(target: str, spec: str, flag: str, noun: str = "code") -> Any:
    """Import ``target`` (a module path or a ``.py`` file) for ``flag spec``."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if target.endswith(".py"):
            return _import_file(target, spec, flag)
        return importlib.import_module(target)
    except InputError:
        raise
    except SyntaxError as exc:
        raise InputError(f"{exc.filename}:{exc.lineno}: syntax error in the {flag} {noun}: {exc.msg}") from None
    except (Exception, SystemExit) as exc:  # SystemExit: a script that reads its command line at import
        frames = traceback.extract_tb(exc.__traceback__)
        ours = str(Path(__file__).resolve().parent)
        user = [f for f in frames if "importlib" not in f.filename and not f.filename.startswith(ours)]
        where = f"{user[-1].filename}:{user[-1].lineno}: " if user else ""
        raise InputError(f"{where}{flag} {spec}: cannot import {target}: {type(exc).__name__}: {exc}") from None


def module_name(target: str) -> str:
    """The name in ``sys.modules`` of what :func:`import_module` imported for ``target``."""
    return f"_trawl_user_{Path(target).stem}" if target.endswith(".py") else target


def _import_file(target: str, spec: str, flag: str) -> Any:
    path = Path(target).resolve()
    if not path.is_file():
        raise InputError(f"{flag} {spec}: no such file {target}")
    loader_spec = importlib.util.spec_from_file_location(module_name(target), path)
    if loader_spec is None or loader_spec.loader is None:
        raise InputError(f"{flag} {spec}: cannot load {target}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[loader_spec.name] = module
    loader_spec.loader.exec_module(module)
    return module


def check_options(cls: Any, where: str, *args: Any, **options: str) -> None:
    """That a user's plug-in class takes the query's ``options`` after ``args`` (checked when the crawl starts, so
    that no worker process dies on the same TypeError): one :class:`ConfigError` ``where: why`` else. A class with
    no signature to read (a builtin type) passes: the process that builds it reports a mismatch."""
    try:
        inspect.signature(cls).bind(*args, **options)
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    except ValueError:
        pass
