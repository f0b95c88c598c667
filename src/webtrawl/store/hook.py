"""``--on-change CMD``: a sink of the changes stream that runs CMD once per change row, the row as JSON on stdin
(with ``TRAWL_CHANGE`` and ``TRAWL_CHANGE_URL`` in its environment), so a webhook is one curl.

It runs in the background like ``--alert-cmd`` (:mod:`webtrawl.hooks`), but no row is skipped: while
``_MAX_RUNNING`` runs are still going (a slow webhook, a burst of changes) the sink is unavailable, so the fan-out
pauses the crawl and calls again with the same batch, whose rows go on from the first not run yet. Like every sink
it is written before the page's URL is completed: a kill -9 between the two fetches the page again and may run the
command twice for one change (at least once, never lost).
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from webtrawl.errors import SinkUnavailable
from webtrawl.hooks import Hooks
from webtrawl.store.base import PageOutput

_MAX_RUNNING = 16
# How long the end of the crawl waits for the runs still going (then kills them): within what the node gives a parser
# to finish (node/stopping.py: 8 s, less the fetchers' drain), or the node kills the parser, and the runs with it
# go on as orphans.
_END_WAIT_S = 4.0


class CommandSink:
    def __init__(self, cmd: str) -> None:
        self.name = "--on-change"
        self._hooks = Hooks(cmd, "--on-change command", _MAX_RUNNING)
        self._batch: Sequence[PageOutput] | None = None  # the batch being written, and how many of its rows ran
        self._done = 0

    def write(self, batch: Sequence[PageOutput]) -> None:
        if batch is not self._batch:  # else the fan-out calls again with the same batch: go on where it stopped
            self._batch, self._done = batch, 0
        changes = [change for out in batch for change in out.changes]
        for change in changes[self._done :]:
            if self._hooks.full():
                raise SinkUnavailable(f"{_MAX_RUNNING} runs of the command are still going")
            env = {"TRAWL_CHANGE": change.change, "TRAWL_CHANGE_URL": change.url}
            self._hooks.run(msgspec.to_builtins(change), env, about=f"{change.change} {change.url}")
            self._done += 1

    def flush(self) -> None:
        self._hooks.reap()

    def close(self) -> None:
        self._hooks.close(_END_WAIT_S)
