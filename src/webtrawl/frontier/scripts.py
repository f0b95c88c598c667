"""The frontier's Lua scripts (``scripts/*.lua``) and the one value both executors queue on a pipeline: :class:`Call`.

Scripts run with EVALSHA; the SHA1 is computed here the same way Redis does, so a pipeline never waits for a SCRIPT
LOAD unless the server answers NOSCRIPT (restart, SCRIPT FLUSH), and then only the failed calls are sent again.
``_common.lua`` is prepended to every script: helpers without a module system; before it, the names shared with
Python (:func:`webtrawl.names.lua_prelude`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Generator
from dataclasses import dataclass
from importlib import resources
from typing import Any, TypeVar

from webtrawl.names import lua_prelude

Arg = str | int | float | bytes


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    source: str
    sha: str


def _load() -> dict[str, Script]:
    folder = resources.files("webtrawl.frontier") / "scripts"
    common = lua_prelude() + (folder / "_common.lua").read_text()
    out = {}
    for item in folder.iterdir():
        if item.name.endswith(".lua") and not item.name.startswith("_"):
            name = item.name[: -len(".lua")]
            source = common + item.read_text()
            out[name] = Script(name, source, hashlib.sha1(source.encode()).hexdigest())
    return out


SCRIPTS: dict[str, Script] = _load()


@dataclass(frozen=True, slots=True)
class Call:
    """One command of a pipeline: a script run (``script`` set, with its keys) or a plain command (``args``)."""

    args: tuple[Arg, ...]
    script: str | None = None
    keys: tuple[str, ...] = ()
    near: str | None = None  # a keyless command (WAIT) goes to the master of this key, on a cluster

    def queue(self, pipe: Any) -> None:
        """Queue on a sync or async redis-py pipeline, plain or cluster (all queue synchronously).

        EVALSHA goes through ``execute_command``: redis-py's cluster pipelines block their ``evalsha`` method but
        route the raw command by its first key like any other.
        """
        if self.script is None and self.near is not None and (cluster := _cluster_of(pipe)) is not None:
            pipe.execute_command(*self.args, target_nodes=cluster.get_node_from_key(self.near))
        elif self.script is None:
            pipe.execute_command(*self.args)
        else:
            pipe.execute_command("EVALSHA", SCRIPTS[self.script].sha, len(self.keys), *self.keys, *self.args)


def _cluster_of(pipe: Any) -> Any:
    """The cluster client of a cluster pipeline (which routes a keyless command by the node given), else None: a
    sync one is its own; an asyncio one holds it (``cluster_client`` since redis-py 6, ``_client`` before)."""
    for client in (pipe, getattr(pipe, "cluster_client", None), getattr(pipe, "_client", None)):
        if hasattr(client, "get_node_from_key"):
            return client
    return None


T = TypeVar("T")
# A frontier operation (commands.py, upkeep.py): yields a pipeline of calls, gets their replies, returns its result.
Steps = Generator[list[Call], list[Any], T]


def script_call(name: str, key: str, *args: Arg) -> Call:
    return Call(args=args, script=name, keys=(key,))


def load_calls() -> list[Call]:
    """SCRIPT LOAD of every script: sent after a NOSCRIPT answer."""
    return [Call(("SCRIPT", "LOAD", s.source)) for s in SCRIPTS.values()]
