"""``--on-change CMD``: a sink of the changes stream that runs CMD once per change row, the row as JSON on stdin
(with ``TRAWL_CHANGE`` and ``TRAWL_CHANGE_URL`` in its environment), so a webhook is one curl.

It runs in the background like ``--alert-cmd`` (:mod:`webtrawl.hooks`). Like every sink it is written before the
page's URL is completed: a kill -9 between the two fetches the page again and may run the command twice for one
change (at least once, never lost).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from webtrawl.hooks import Hooks
from webtrawl.store.base import PageOutput

_MAX_RUNNING = 16


class CommandSink:
    def __init__(self, cmd: str) -> None:
        self.name = "--on-change"
        self._hooks = Hooks(cmd, "--on-change command", _MAX_RUNNING)

    def write(self, batch: Sequence[PageOutput]) -> None:
        for out in batch:
            for change in out.changes:
                env = {"TRAWL_CHANGE": change.change, "TRAWL_CHANGE_URL": change.url}
                self._hooks.run(msgspec.to_builtins(change), env)

    def flush(self) -> None:
        self._hooks.reap()

    def close(self) -> None:
        self._hooks.close()
