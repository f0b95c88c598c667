"""WakeEvent: a bounded wait that ends at the timeout or at set(), whichever comes first, and leaves nothing behind."""

from __future__ import annotations

import asyncio

from tests.fetch.servers import run
from webtrawl.fetch.wake import WakeEvent


def test_a_bounded_wait_ends_at_its_timeout_unset() -> None:
    async def body() -> None:
        event = WakeEvent()
        assert await event.wait_at_most(0.001) is False
        assert await event.wait_at_most(0) is False
        assert not event._bounded

    run(body())


def test_set_ends_every_bounded_wait_at_once() -> None:
    async def body() -> None:
        event = WakeEvent()
        waits = [asyncio.create_task(event.wait_at_most(3600)) for _ in range(3)]
        plain = asyncio.create_task(event.wait())  # an Event's own waiters still wake too
        await asyncio.sleep(0)
        event.set()
        assert await asyncio.gather(*waits) == [True, True, True]
        assert await plain is True
        assert await event.wait_at_most(3600) is True  # already set: no wait
        assert not event._bounded

    run(body())


def test_a_cleared_event_waits_again_and_a_cancelled_wait_is_forgotten() -> None:
    async def body() -> None:
        event = WakeEvent()
        event.set()
        event.clear()
        waiting = asyncio.create_task(event.wait_at_most(3600))
        await asyncio.sleep(0)
        assert not waiting.done()
        waiting.cancel()
        await asyncio.gather(waiting, return_exceptions=True)
        assert waiting.cancelled() and not event._bounded

    run(body())
