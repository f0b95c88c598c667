"""The part of a batch a later life can redo, and the redoing: what a parser's (or the node's) start does with the
batch a killed parser left in its log (:mod:`webtrawl.store.batchlog`).

A batch logged as ready has its outputs written and its links added; what is left is its near-duplicate entries,
its content states and its completions (:class:`Finish`). Each may be done twice (set adds, hash writes, and
completions whose lease is gone are discarded), so a kill during the redo is redone again. Light on purpose: the
node's supervisor imports it, not the parser's page processing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from webtrawl.messages import Completion
from webtrawl.store.batchlog import clear, log_paths
from webtrawl.store.batchlog import settle as settle_log

if TYPE_CHECKING:
    from webtrawl.frontier import Stale
    from webtrawl.parse.simhash import NearDuplicateIndex

log = logging.getLogger("webtrawl.parse")

State = tuple[str, str, bytes | None]  # a content state to store: hash key, field, value (None: delete the field)
SaveStates = Callable[[Sequence[State]], None]


class Finish(msgspec.Struct, array_like=True):
    """What is left of a batch once its outputs are written and its links added (a ``Ready`` entry's payload)."""

    hashed: list[tuple[str, int]]  # (url, simhash) for the near-duplicate index
    states: list[State]  # content states (--chunks / --changes)
    completions: list[Completion]
    since: int = 0  # the parser's completion mark when the batch was logged (0: none, or a log from before it)
    unhashed: list[tuple[str, int]] = []  # (url, simhash) of recrawled pages' earlier copies: out of the index


FINISH_ENCODER = msgspec.msgpack.Encoder()
_FINISH_DECODER = msgspec.msgpack.Decoder(Finish)


class Completer(Protocol):
    def complete(self, completions: Sequence[Completion]) -> list[Stale | None]: ...

    def complete_redo(self, completions: Sequence[Completion], parser: str, since: int) -> list[Stale | None]: ...


def save_states(client: Any, states: Sequence[State]) -> None:
    """Store content states in one pipeline (the tracker's, and a node's redo of a killed parser's)."""
    if not states:
        return
    pipe = client.pipeline(transaction=False)
    for key, field, value in states:
        if value is None:
            pipe.hdel(key, field)
        else:
            pipe.hset(key, field, value)
    pipe.execute()


def finish_batch(
    frontier: Completer,
    neardup: NearDuplicateIndex | None,
    save: SaveStates | None,
    done: Finish,
    redo_of: str | None = None,
) -> None:
    """The batch's last steps, in their order; ``redo_of``: the parser whose killed life logged it."""
    if done.unhashed and neardup is not None:
        neardup.remove(done.unhashed)
    if done.hashed and neardup is not None:
        neardup.add(done.hashed)  # before complete: a page completed is always in the index
    if save is not None:
        save(done.states)  # after the rows, before complete: a crash writes them again, never loses them
    if redo_of is None:
        answers = frontier.complete(done.completions)
    else:  # a lease gone may be that life's own completion, which the kill kept out of the log
        answers = frontier.complete_redo(done.completions, redo_of, done.since)
    stale = [c for c, answer in zip(done.completions, answers, strict=True) if answer is not None]
    if stale:
        log.warning(
            "%d completion(s) discarded: their URLs had been taken back (held past --process-ttl) and are "
            "another fetch's now; their records may be stored twice",
            len(stale),
        )


def settle(path: Path, frontier: Completer, neardup: NearDuplicateIndex | None, save: SaveStates | None) -> None:
    """Settle the batch a killed life of a parser left in its log at ``path``: rolled back, or rolled forward here."""
    payload = settle_log(path)
    if payload is None:
        return
    done = _FINISH_DECODER.decode(payload)
    finish_batch(frontier, neardup, save, done, redo_of=path.stem)  # the log is named after its parser
    clear(path)
    log.warning("%s: completed the %d page(s) a killed parser had stored", path.name, len(done.completions))


def settle_all(directory: Path, frontier: Completer, neardup: NearDuplicateIndex, save: SaveStates) -> None:
    """A node's start, before it takes back its previous run's leases: settle every parser's log."""
    for path in log_paths(directory):
        settle(path, frontier, neardup, save)
