"""The fetcher's end of the page channel (:mod:`webtrawl.pagepipe`): pages handed to the parsers one at a time
per socket, their leases kept until a parser confirms it stored them, and the catch-up barrier of a restart."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import socket
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from webtrawl.messages import Page
from webtrawl.pagepipe import ACK, BARRIER, DONE, SOCKET_BUFFER, frame

log = logging.getLogger("webtrawl.fetch")
_STOP_POLL_S = 0.25  # how often a barrier's wait looks at the stop flag (a process flag: no event to await)
LostPages = Callable[[list[tuple[int, str]]], None]  # the (shard, token) of pages a dead parser had not stored


FETCH_BUG = "fetch-bug"  # a page that could not be framed, or a URL whose fetch task failed with a bug every time


def _framed(page: Page, body_parts: Sequence[bytes]) -> tuple[bytearray, Sequence[bytes]]:
    """``frame(page)``, or, if the page cannot be encoded (a field no encoder takes: a bug, such as a lone surrogate
    once in a reason phrase), the frame of an error page for its URL, so that a parser records and completes it.
    Raising here killed the fetch task after its lease was released for the parsers: the URL waited out
    --process-ttl, was fetched again and failed again, forever."""
    try:
        return frame(page, body_parts)
    except (msgspec.EncodeError, UnicodeError, TypeError, ValueError) as exc:
        log.exception("%s: the page could not be sent to a parser; it is recorded as %s", page.lease.url, FETCH_BUG)
        detail = f"the page could not be sent to a parser: {type(exc).__name__}: {exc}"
        failed = Page(lease=page.lease, error=FETCH_BUG, error_detail=detail[:300], keep_until=page.keep_until)
        return frame(failed)


class _Link:
    """One connection to a parser, and the leases of the pages it was handed and has not confirmed as stored."""

    def __init__(self, writer: asyncio.StreamWriter, reader: asyncio.StreamReader, on_lost: LostPages) -> None:
        self.writer = writer
        self.unconfirmed: collections.deque[tuple[int, str]] = collections.deque()
        self.on_lost = on_lost
        self.open = True
        self.watch = asyncio.ensure_future(self._confirmations(reader))

    def handed(self, page: Page) -> None:
        self.unconfirmed.append((page.lease.shard, page.lease.token))
        if not self.open:  # the parser was gone before this write could tell
            self._lost()

    async def _confirmations(self, reader: asyncio.StreamReader) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, OSError):
            while True:
                (stored,) = ACK.unpack(await reader.readexactly(ACK.size))
                for _ in range(min(stored, len(self.unconfirmed))):
                    self.unconfirmed.popleft()
        self.open = False  # the parser closed its end: it died (or dropped us), and stores nothing more of ours
        self._lost()

    def _lost(self) -> None:
        leases = list(self.unconfirmed)
        self.unconfirmed.clear()
        if leases:
            self.on_lost(leases)

    async def close(self) -> None:
        self.watch.cancel()  # closing is not losing: a parser stores what it was handed before it ends
        self.writer.close()
        await asyncio.gather(self.watch, return_exceptions=True)
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()


class _Peer:
    def __init__(self, path: Path, on_lost: LostPages) -> None:
        self.path = path
        self.on_lost = on_lost
        self.link: _Link | None = None
        self.retry_at = 0.0

    async def connect(self, now: float) -> _Link | None:
        # A hang-up closes the transport a loop turn before the link's watch marks it: writing to it then raises
        # (uvloop), so a closing transport is a link gone too. Its watch still reports the unconfirmed pages.
        if self.link is not None and self.link.open and not self.link.writer.is_closing():
            return self.link
        if self.link is not None:
            self.reset(now)
            return None
        if now < self.retry_at:
            return None
        try:
            reader, writer = await asyncio.open_unix_connection(str(self.path))
        except OSError:
            self.retry_at = now + 0.2
            return None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
        self.link = _Link(writer, reader, self.on_lost)
        return self.link

    def reset(self, now: float) -> None:
        if self.link is not None:
            self.link.writer.close()
        self.link = None
        self.retry_at = now + 0.2


async def parsers_caught_up(
    paths: Sequence[Path], timeout: float, stopped: Callable[[], bool] = lambda: False
) -> int | None:
    """Ask every parser to store what it has received (a barrier), and wait for their answers; returns how many did
    not answer within ``timeout``, or None if ``stopped()`` came true first (a node told to stop does not wait out
    a stuck parser). A parser that is not listening, or dies meanwhile, holds nothing to wait for."""

    async def ask(path: Path) -> None:
        try:
            reader, writer = await asyncio.open_unix_connection(str(path))
        except OSError:
            return
        try:
            writer.write(BARRIER)
            await writer.drain()
            await reader.readexactly(len(DONE))
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    tasks = [asyncio.ensure_future(ask(path)) for path in paths]
    if not tasks:
        return 0
    deadline = asyncio.get_running_loop().time() + timeout
    late: set[asyncio.Future[None]] = set(tasks)
    while late and not stopped():
        left = deadline - asyncio.get_running_loop().time()
        if left <= 0:
            break
        _, late = await asyncio.wait(late, timeout=min(left, _STOP_POLL_S))
    for task in late:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return None if late and stopped() else len(late)


class PageSender:
    """Fetcher side: each parser socket takes one page at a time, in turn; a parser still taking an earlier page
    is passed over while another is free. Waits (never drops) when no parser is reachable."""

    def __init__(self, paths: list[Path], on_lost: LostPages = lambda leases: None) -> None:
        self._peers = [_Peer(p, on_lost) for p in paths]
        self._free: asyncio.Queue[_Peer] = asyncio.Queue()  # first come, first served
        for peer in self._peers:
            self._free.put_nowait(peer)

    async def send(self, page: Page, body_parts: Sequence[bytes] = ()) -> None:
        """Hand ``page`` to a parser; ``body_parts``: its body in pieces, ``page.body`` then empty (see frame)."""
        loop = asyncio.get_running_loop()
        for tried in itertools.count(1):
            peer = await self._free.get()
            try:
                link = await peer.connect(loop.time())
                if link is not None:
                    try:
                        head, body = _framed(page, body_parts)
                        # One writev on uvloop (a fetcher's loop): fewer syscalls than a write per buffer, no join.
                        # (asyncio's own loop joins the buffers: one copy of the body, as before the split frame.)
                        link.writer.writelines([head, *body])
                        await link.writer.drain()
                        link.handed(page)
                        return
                    except (ConnectionError, OSError):
                        peer.reset(loop.time())
            finally:
                self._free.put_nowait(peer)
            if tried % len(self._peers) == 0:
                await asyncio.sleep(0.05)  # no parser reachable right now: wait for the supervisor to restart one

    async def close(self) -> None:
        for peer in self._peers:
            if peer.link is not None:
                await peer.link.close()
                peer.link = None
