"""Commands that other distributions add to ``trawl``, found through entry points (as Scrapy finds third-party
commands through its ``scrapy.commands`` group).

An entry point of the group ``webtrawl.commands`` is named after its command and points at a module or object with
``HELP`` (one line for ``trawl --help``), ``add_arguments(parser)`` and ``run(namespace) -> int``; a name that a
built-in command has is ignored. ``trawl testweb`` and ``trawl bench`` come this way from webtrawl-testweb, so the
crawler knows neither its test web nor its benchmark by import.

Entry points are read only when the command line may name one (no built-in command first): reading them costs
~0.1 s, which a crawl's start does not pay.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection, Sequence
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Protocol

GROUP = "webtrawl.commands"

# Commands a source checkout has from a distribution an install may lack: the error says what to install.
_ELSEWHERE = {"testweb": "webtrawl-testweb", "bench": "webtrawl-testweb"}
_HOW = {"webtrawl-testweb": " (pip install ./testweb from a source checkout)"}


class PluginCommand(Protocol):
    """What an entry point of ``webtrawl.commands`` loads (a module will do)."""

    HELP: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, ns: argparse.Namespace) -> int: ...


def add_plugin_commands(sub: argparse._SubParsersAction[Any], argv: Sequence[str], builtin: Collection[str]) -> None:
    """Adds the installed plug-in commands to ``sub``: the one ``argv`` names with its flags, the others by name
    (with their help when ``trawl --help`` asks for it)."""
    command = next((token for token in argv if not token.startswith("-")), None)
    if command in builtin:
        return
    wants_help = command is None and bool({"-h", "--help"} & set(argv))
    found = {ep.name: ep for ep in entry_points(group=GROUP) if ep.name not in builtin}
    for name, ep in sorted(found.items()):
        if name == command:
            _add_named(sub, name, ep)
        else:
            sub.add_parser(name, help=_help(ep) if wants_help else None)
    if command in _ELSEWHERE and command not in found:
        _failed(sub, command, _needs(command, _ELSEWHERE[command], command))


def _add_named(sub: argparse._SubParsersAction[Any], name: str, ep: EntryPoint) -> None:
    try:
        plugin: PluginCommand = ep.load()
        help_line = str(plugin.HELP)
    except ModuleNotFoundError as exc:
        dist = ep.dist.name if ep.dist is not None else _ELSEWHERE.get(name, ep.value)
        _failed(sub, name, _needs(name, dist, exc.name or ep.value))
        return
    except Exception as exc:  # a plug-in's own import error: one line, like every user error
        _failed(sub, name, f"trawl {name}: its plug-in {ep.value} failed to load: {exc!r}")
        return
    parser = sub.add_parser(name, help=help_line)
    plugin.add_arguments(parser)
    parser.set_defaults(plugin_run=plugin.run)


def _help(ep: EntryPoint) -> str | None:
    try:
        return str(ep.load().HELP)
    except Exception:  # trawl --help lists the command all the same; running it says what is wrong
        return f"(from {ep.dist.name if ep.dist is not None else ep.value}; cannot load: trawl {ep.name} says why)"


def _needs(command: str, dist: str, module: str) -> str:
    return f"trawl {command} needs the {dist} package{_HOW.get(dist, '')} [missing module: {module}]"


def _failed(sub: argparse._SubParsersAction[Any], name: str, message: str) -> None:
    """Running the command says ``message``; until then it takes any flags (not "unrecognized arguments")."""
    parser = sub.add_parser(name)
    parser.set_defaults(accepts_anything=True, plugin_error=message)
