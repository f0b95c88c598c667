"""Big bodies take turns in a fetcher (fetch/wire.py, BIG_BODIES at a time); the wait for a turn is the fetcher's,
not the server's.

Two slow servers trickling big bodies held both turns for up to --total; a fast host's big page queued behind them
timed out as a plain ``timeout``: it was retried and its host backed off, for another host's slowness, and a page
that got its turn in time had the wait in its response time (``--adaptive-delay`` lengthened its host's gap). The
time limit itself stays (self-fencing counts on it): a page whose limit runs out while it waits for a turn ends as
``TurnTimeout``, which the fetcher gives back to its queue (no retry used, no back-off: test_visits.py).
"""

from __future__ import annotations

import asyncio

import pytest

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_raw
from webtrawl.errors import ConnectionReset, TurnTimeout
from webtrawl.fetch.wire import BIG_BODIES, BIG_BODY

FAST_LIMIT = 0.5  # the time limit of a page that waits for a turn longer than that


def test_a_big_page_waiting_for_a_turn_behind_stalled_ones_is_not_the_hosts_timeout() -> None:
    release = asyncio.Event()
    big = b"x" * (BIG_BODY * 2)

    async def stalls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(big) * 2, big))
        await writer.drain()
        # then the connection closes mid-body: the stalled fetch ends, its turn is free (or the client went away)
        waits = [asyncio.ensure_future(release.wait()), asyncio.ensure_future(reader.read())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def fast(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(big), big))
        await writer.drain()

    async def body() -> None:
        cfg = local_cfg(limits={"max_body": len(big) * 4})
        async with serve_raw(stalls) as slow_port, serve_raw(fast) as fast_port, local_client(cfg) as client:
            turns = client._big_bodies
            stalled = [
                asyncio.create_task(client.fetch(f"http://slow{i}.test:{slow_port}/", timeout=60.0))
                for i in range(BIG_BODIES)
            ]
            while not turns.locked():  # both turns taken by bodies that stall
                await asyncio.sleep(0.01)
            loop = asyncio.get_running_loop()
            started = loop.time()
            short = asyncio.create_task(client.fetch(f"http://short.test:{fast_port}/", timeout=FAST_LIMIT))
            patient = asyncio.create_task(client.fetch(f"http://patient.test:{fast_port}/", timeout=60.0))
            while len(getattr(turns, "_waiters", None) or ()) < 2:  # both pages wait for a turn
                await asyncio.sleep(0.01)
            waiting = loop.time()
            with pytest.raises(TurnTimeout):  # not a plain timeout: the host was not slow
                await short
            released = loop.time()
            release.set()
            for task in stalled:
                with pytest.raises(ConnectionReset):
                    await task
            resp = await patient
            took = loop.time() - started
            assert (resp.status, resp.body, resp.truncated) == (200, big, False)
            # its response time leaves out the wait for a turn (at least from `waiting` to `released`)
            assert resp.elapsed_ms <= (took - (released - waiting)) * 1000

    run(body())
