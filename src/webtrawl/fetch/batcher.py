"""Releases of many fetch tasks in one Redis round trip.

A fetcher ends ~100 fetches a second, each with a ``release`` (the host's next-allowed time, the URL kept for
its parser). Sent one by one, each costs a pipeline in redis-py (about a fifth of the fetcher's CPU in the
profile of ``trawl bench``) and a script call in Redis. Here every release waits a few milliseconds for
others, then all go out as one pipeline with one script call per shard, and each caller resumes when its own
release is in Redis (or gets the error that stopped it), with its own answer (the host's next lease if it asked to
hold the host). Callers still send their page only after that, so the parser's ``complete`` always finds the URL
released.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from webtrawl.frontier import Release
from webtrawl.frontier.base import ReleaseAnswer

# How long the first release of a batch waits for company. A release's CPU in the fetcher and in Redis falls from
# batches of one to batches of several (benchmarks/RESULTS.md); a fetcher ends a page every ~8 ms, so 10 ms made
# batches of about two. The wait delays a page's hand-off and the host's next turn (its gap runs from the release)
# by as much: little next to a politeness gap of a second or more.
_WAIT_S = 0.03
_MAX_BATCH = 512


class ReleaseBatcher:
    def __init__(
        self,
        send: Callable[[Sequence[Release]], Awaitable[list[ReleaseAnswer]]],
        wait_s: float = _WAIT_S,
        max_batch: int = _MAX_BATCH,
    ) -> None:
        self._send = send
        self._wait_s = wait_s
        self._max_batch = max_batch
        self._pending: list[tuple[Release, asyncio.Future[ReleaseAnswer]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def release(self, release: Release) -> ReleaseAnswer:
        """Queue ``release``; returns its answer once it is written (raises what the write raised)."""
        future: asyncio.Future[ReleaseAnswer] = asyncio.get_running_loop().create_future()
        self._pending.append((release, future))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush_later())
        return await future

    async def _flush_later(self) -> None:
        try:
            await asyncio.sleep(self._wait_s)
            while self._pending:
                batch, self._pending = self._pending[: self._max_batch], self._pending[self._max_batch :]
                await self._write(batch)
        finally:
            self._flusher = None
            if self._pending:  # cancelled with releases queued: their callers must not hang
                for _, future in self._pending:
                    future.cancel()
                self._pending = []

    async def _write(self, batch: list[tuple[Release, asyncio.Future[ReleaseAnswer]]]) -> None:
        try:
            answers = await self._send([release for release, _ in batch])
        except Exception as exc:
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        except BaseException:
            for _, future in batch:
                future.cancel()
            raise
        for (_, future), answer in zip(batch, answers, strict=True):
            if not future.done():
                future.set_result(answer)
