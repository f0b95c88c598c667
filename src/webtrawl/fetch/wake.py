"""An asyncio Event with a cheap bounded wait, for the fetcher's per-page waits.

``asyncio.wait_for(event.wait(), t)`` wraps the wait in a new Task and, at the timeout (the usual end of a host
session's sleep), cancels it and waits for the cancellation to unwind: a task, a handle, exceptions and extra loop
iterations per wait. :meth:`WakeEvent.wait_at_most` waits on one future and one timer instead.
"""

from __future__ import annotations

import asyncio


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class WakeEvent(asyncio.Event):
    """:class:`asyncio.Event` whose :meth:`set` also ends the bounded waits of :meth:`wait_at_most`."""

    def __init__(self) -> None:
        super().__init__()
        self._bounded: set[asyncio.Future[None]] = set()

    def set(self) -> None:
        super().set()
        for waiter in self._bounded:
            _wake(waiter)

    async def wait_at_most(self, seconds: float) -> bool:
        """Wait until the event is set or ``seconds`` have passed (no TimeoutError); returns whether it is set."""
        if self.is_set():
            return True
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        timer = loop.call_later(max(0.0, seconds), _wake, waiter)
        self._bounded.add(waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._bounded.discard(waiter)
        return self.is_set()
