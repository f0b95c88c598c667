"""A Python callback (``--extract package.module:function`` or ``--extract path/to/file.py:function``).

The function is called with a :class:`~webtrawl.extract.page.Page` and returns (or yields) item dicts and, if it
wants, links to follow (:class:`~webtrawl.extract.base.Follow` or plain strings). The working directory is on the
import path, as it is for ``python -m``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from webtrawl.errors import InputError, UserCodeError
from webtrawl.extract.base import ExtractResult, Follow
from webtrawl.extract.document import Document
from webtrawl.extract.page import Page
from webtrawl.extract.routing import encode_route


def is_callback_spec(spec: str) -> bool:
    """``module:function`` (not a rules file): has a colon and does not end in .toml."""
    return ":" in spec and not spec.lower().endswith(".toml")


def load_callback(spec: str) -> CallbackExtractor:
    target, _, name = spec.rpartition(":")
    if not target or not name.isidentifier():
        raise InputError(f"--extract {spec}: want package.module:function or file.py:function")
    module = import_target(target, spec, "--extract")
    func = getattr(module, name, None)
    if func is None:
        raise InputError(f"--extract {spec}: {target} has no {name!r}")
    if not callable(func):
        raise InputError(f"--extract {spec}: {name} is not a function")
    return CallbackExtractor(spec, func)


def import_target(target: str, spec: str, flag: str) -> Any:
    """The module ``target`` (a dotted name or a .py file) of the user's ``flag spec``; :class:`InputError` (with the
    user's file and line) if it does not import. ``__main__`` is the running script (in a spawned child, the
    script re-run as ``__mp_main__`` by multiprocessing)."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        if target.endswith(".py"):
            path = Path(target).resolve()
            if not path.is_file():
                raise InputError(f"{flag} {spec}: no such file {target}")
            loader_spec = importlib.util.spec_from_file_location(f"_trawl_user_{path.stem}", path)
            if loader_spec is None or loader_spec.loader is None:
                raise InputError(f"{flag} {spec}: cannot load {target}")
            module = importlib.util.module_from_spec(loader_spec)
            sys.modules[loader_spec.name] = module
            loader_spec.loader.exec_module(module)
            return module
        return importlib.import_module(target)
    except InputError:
        raise
    except SyntaxError as exc:
        raise InputError(f"{exc.filename}:{exc.lineno}: syntax error in the {flag} callback: {exc.msg}") from None
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)
        ours = str(Path(__file__).resolve().parent.parent)
        user = [f for f in frames if "importlib" not in f.filename and not f.filename.startswith(ours)]
        where = f"{user[-1].filename}:{user[-1].lineno}: " if user else ""
        raise InputError(f"{where}{flag} {spec}: cannot import {target}: {type(exc).__name__}: {exc}") from None


class CallbackExtractor:
    def __init__(self, name: str, func: Callable[[Page], Any]) -> None:
        self.name = name
        self.func = func

    def extract(self, doc: Document) -> ExtractResult:
        page = Page(doc)
        return collect(self.func(page), page, _plain_route)


def _plain_route(follow: Follow) -> str:
    """A function callback has no other callbacks to route to; ``data`` still reaches the next page."""
    if follow.callback is not None:
        raise UserCodeError(f"Follow(callback={follow.callback!r}) needs a spider class: --spider module:Class")
    return encode_route(None, follow.data)


def collect(out: Any, page: Page, route: Callable[[Follow], str]) -> ExtractResult:
    """What a callback returned or yielded, as items and links; ``route`` gives each Follow its route (and raises
    :class:`UserCodeError` for a callback or data it refuses)."""
    result = ExtractResult()
    for value in _values(out):
        if isinstance(value, Follow | str):
            url = value.url if isinstance(value, Follow) else value
            if not isinstance(url, str):
                if url is None:
                    continue  # Follow(page.css("a.next::attr(href)").get()) on the last page
                raise UserCodeError(f"Follow wants a URL string, not a {type(url).__name__}")
            result.extra_links.append(url)
            if isinstance(value, Follow):
                if value.priority is not None:
                    best = result.priorities.get(url, value.priority)  # the same link twice: its best rank
                    result.priorities[url] = min(best, value.priority)
                if value.callback is not None or value.data:
                    routed = route(value)
                    if routed:
                        result.routes.setdefault(url, routed)  # the same link twice: its first route
        elif isinstance(value, Mapping):
            result.items.append(dict(value))
        else:
            raise UserCodeError(f"the callback gave a {type(value).__name__}, not a dict, Follow or URL string")
    if not page.follow_page_links:
        result.links, result.extra_links = result.extra_links, []
    return result


def _values(out: Any) -> Iterable[Any]:
    if out is None:
        return ()
    if isinstance(out, Mapping | str | Follow):
        return (out,)
    if isinstance(out, Iterable):
        return out
    return (out,)
