"""The bounded channel from fetcher processes to parser processes: msgpack frames over unix sockets.

Each parser listens on its own socket; each fetcher keeps one connection per parser and spreads pages over them.
Why not a ``multiprocessing.Queue``: a process killed while holding the queue's read lock deadlocks every other
reader, and a crawler must survive ``kill -9`` of any process. A socket dies with its process: the fetcher notices,
sends to another parser, and reconnects when the supervisor has restarted the dead one.

Back-pressure: the kernel's socket buffers are the queue bound. When parsers fall behind, ``send`` waits in
``drain()``, the fetcher's in-flight slots stay occupied and it leases less. Nothing is dropped. One page at a time
is encoded and written per parser socket: pages waiting for a slow parser are held once (the Page), not also as
encoded frames piled up in the transport's buffer.

A frame is ``>II`` (length of the page's msgpack without its body, length of the body), that msgpack, then the
body as is. A header of two zeros is a **catch-up barrier** (no page has an empty msgpack): a fetcher that starts
again after a ``kill -9`` asks each parser to store every page it has received so far, then takes back the URLs its
previous life still had leased. The dead life's pages are all in the parser's socket buffer before its end of file
(the kernel queued them at each write), so one that reached a parser is stored once, and only those that never did
(lost with the process, or cut mid-frame) are fetched again.

The other way, after each batch, a parser tells each fetcher how many more of its pages it has stored (``>I``). A
fetcher keeps the leases of the pages a parser has not confirmed; when that parser dies (its end of the connection
closes), they go to ``on_lost``, which takes them back at once: they would otherwise wait out ``--process-ttl``.

The body is written as its own buffer: encoding it into the msgpack copied every page's body (and grew the buffer
on the way) in the fetcher, which is the busier process per page.
"""

from __future__ import annotations

import contextlib
import io
import os
import selectors
import socket
import struct
from collections.abc import Sequence
from pathlib import Path

import msgspec

from webtrawl.heap import huge_pages
from webtrawl.messages import PAGE_DECODER, PAGE_ENCODER, Page
from webtrawl.values import BODY_CAP

HEADER = struct.Struct(">II")  # length of the page without its body, length of the body
BARRIER = HEADER.pack(0, 0)
DONE = b"\x01"  # a parser's answer to a barrier: everything received before it is stored and completed
ACK = struct.Struct(">I")  # a parser to a fetcher, after each batch: how many more of its pages are stored
_MAX_FRAME = BODY_CAP + 64 * 1024 * 1024  # a body at --max-body's cap and the page's other fields
SOCKET_BUFFER = 1024 * 1024


class PageReceiver:
    """Parser side: accepts any number of fetcher connections and yields whole pages. Synchronous on purpose:
    the parser is CPU-bound and does nothing else while waiting."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(64)
        self._listener.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._buffers: dict[socket.socket, _Inbox] = {}
        self._asked: list[socket.socket] = []  # connections waiting for the answer to their barrier

    @property
    def connections(self) -> int:
        return len(self._buffers)

    @property
    def asked(self) -> bool:
        """A fetcher waits for :meth:`answer`: the caller stores the pages it has, then answers."""
        return bool(self._asked)

    def poll(self, timeout: float, max_pages: int = 64) -> list[Page]:
        """Pages that arrived within ``timeout`` seconds (at most ``max_pages``, so the caller stays responsive).
        After a barrier: every page the connections hold, so that a dead fetcher's are all among them."""
        pages: list[Page] = []
        for key, _ in self._selector.select(timeout):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if sock is self._listener:
                self._accept()
                continue
            self._read(sock, pages)
            if len(pages) >= max_pages:
                break
        if self._asked:
            for sock in list(self._buffers):
                while sock in self._buffers and self._read(sock, pages):
                    pass
        return pages

    def acknowledge(self) -> None:
        """Tell each fetcher how many of its pages were stored since the last time: call after a batch, when every
        page :meth:`poll` returned is stored (a fetcher that misses one only keeps a lease it needs no more)."""
        for sock, inbox in self._buffers.items():
            if inbox.taken:
                with contextlib.suppress(OSError):
                    sock.send(ACK.pack(inbox.taken))
                inbox.taken = 0

    def answer(self) -> None:
        """Tell the fetchers whose barriers came that the pages received before them are stored."""
        for sock in self._asked:
            with contextlib.suppress(OSError):  # it gave up waiting, or died: nothing to tell
                sock.send(DONE)
        self._asked.clear()

    def _accept(self) -> None:
        with contextlib.suppress(BlockingIOError):
            conn, _ = self._listener.accept()
            conn.setblocking(False)
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
            self._buffers[conn] = _Inbox()
            self._selector.register(conn, selectors.EVENT_READ, None)

    def _read(self, sock: socket.socket, pages: list[Page]) -> bool:
        """One read; False when there was nothing to read or the connection ended."""
        inbox = self._buffers[sock]
        try:
            n = sock.recv_into(inbox.room())
        except BlockingIOError:
            return False
        except OSError:
            n = 0
        if not n or not inbox.took(n, pages):
            self._drop(sock)
            return False
        if inbox.barriers:
            inbox.barriers = 0
            self._asked.append(sock)
        return True

    def _drop(self, sock: socket.socket) -> None:
        # A partial frame from a dead fetcher is discarded: its URL is still leased and will be fetched again.
        self._selector.unregister(sock)
        self._buffers.pop(sock, None)
        if sock in self._asked:
            self._asked.remove(sock)
        sock.close()

    def close(self) -> None:
        for sock in list(self._buffers):
            self._drop(sock)
        self._selector.unregister(self._listener)
        self._listener.close()
        self._selector.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


class _Inbox:
    """One fetcher connection's bytes: read into one reused buffer (``recv_into``), each body copied out once.

    ``recv`` allocated a fresh buffer of up to 1 MiB per read and appending it to the pending bytes copied it
    again: two copies of each body and a big allocation or two per page (_read took ~10% of a parser's
    samples in a profile of the realistic bench; bench_pagepipe.py, the receiving end alone: 0.060 -> 0.051 ms
    per page). A body that does not fit the buffer is read straight into its own ``BytesIO``, whose bytes
    ``getvalue()`` hands over without a copy: growing the buffer to the frame and copying the body out of it
    touched twice the fresh memory, at a page fault per 4 KiB (a 10 MiB page cost the parser ~6 ms more). The
    buffer grows only for a page whose fields without the body do not fit it (a rendered page's DOM), and goes
    back to its usual size once such a frame has been taken."""

    __slots__ = ("barriers", "big", "big_got", "big_page", "big_view", "buf", "filled", "taken", "view")

    def __init__(self) -> None:
        self.buf = bytearray(SOCKET_BUFFER)
        self.view = memoryview(self.buf)
        self.filled = 0
        self.big: io.BytesIO | None = None  # the body being read past the buffer, its page and view
        self.big_page: Page | None = None
        self.big_view = memoryview(b"")
        self.big_got = 0
        self.barriers = 0  # barrier frames taken since the receiver last looked
        self.taken = 0  # pages taken since the last acknowledgement

    def room(self) -> memoryview:
        """Where the next read goes: the rest of a big body, else the free end of the buffer, grown first if the
        pending frame's fields (without the body) need it."""
        if self.big is not None:
            return self.big_view[self.big_got :]
        if self.filled >= HEADER.size:
            meta_size, body_size = HEADER.unpack_from(self.buf)
            body_at = HEADER.size + meta_size
            if body_at > len(self.buf) and meta_size + body_size <= _MAX_FRAME:
                self._resize(body_at)
        return self.view[self.filled :]

    def took(self, n: int, pages: list[Page]) -> bool:
        """Account for ``n`` bytes read; whole frames go to ``pages``. False: the peer sent a frame too big."""
        if self.big is not None:
            self.big_got += n
            if self.big_got == len(self.big_view):
                self._big_done(pages)
            return True
        self.filled += n
        view, at = self.view, 0
        while self.filled - at >= HEADER.size:
            meta_size, body_size = HEADER.unpack_from(self.buf, at)
            if meta_size + body_size > _MAX_FRAME:
                return False
            if not meta_size:  # a barrier (a page's msgpack is never empty)
                self.barriers += 1
                at += HEADER.size
                continue
            body_at = at + HEADER.size + meta_size
            end = body_at + body_size
            if end > self.filled:
                break
            page = PAGE_DECODER.decode(view[at + HEADER.size : body_at])
            page.body = bytes(view[body_at:end])
            pages.append(page)
            self.taken += 1
            at = end
        if at:
            rest = self.filled - at
            view[:rest] = view[at : self.filled]  # the start of the next frame (overlap is fine: memmove)
            self.filled = rest
        self._start_big()
        if len(self.buf) > SOCKET_BUFFER and self.filled <= SOCKET_BUFFER:
            self._resize(SOCKET_BUFFER)  # a big frame is through: do not keep its buffer
        return True

    def _start_big(self) -> None:
        """A pending frame (at the start of the buffer) too big for the buffer, its fields all in: the rest of its
        body is read into a buffer of the body's size."""
        if self.filled < HEADER.size:
            return
        meta_size, body_size = HEADER.unpack_from(self.buf)
        body_at = HEADER.size + meta_size
        if body_at + body_size <= len(self.buf) or body_at > self.filled:
            return
        self.big_page = PAGE_DECODER.decode(self.view[HEADER.size : body_at])
        # Sized once, the reads write into it in place. ``bytes(n)`` is calloc'd (fresh zero pages, not written
        # here), and the BytesIO holds its only reference, so its buffer is not copied: a seek past the end and a
        # write zero-filled the whole body before the reads wrote it again.
        self.big = io.BytesIO(bytes(body_size))
        self.big_view = self.big.getbuffer()
        huge_pages(self.big_view)  # a body in its own mapping (a parser's heap.PARSER_MMAP_THRESHOLD): fewer faults
        self.big_got = self.filled - body_at
        self.big_view[: self.big_got] = self.view[body_at : self.filled]
        self.filled = 0

    def _big_done(self, pages: list[Page]) -> None:
        assert self.big is not None and self.big_page is not None
        self.big_view.release()  # no view left: getvalue() hands over the buffer itself
        self.big_page.body = self.big.getvalue()
        pages.append(self.big_page)
        self.taken += 1
        self.big, self.big_page, self.big_view, self.big_got = None, None, memoryview(b""), 0

    def _resize(self, size: int) -> None:
        buf = bytearray(size)
        buf[: self.filled] = self.view[: self.filled]
        self.view.release()
        self.buf, self.view = buf, memoryview(buf)


def frame(page: Page, body_parts: Sequence[bytes] = ()) -> tuple[bytearray, Sequence[bytes]]:
    """The buffers of ``page``'s frame: its header with the page without body, then the body, which is
    ``page.body`` or, if given, ``body_parts`` (a body left in the chunks it came in: fetch.client)."""
    head = bytearray(HEADER.size)
    PAGE_ENCODER.encode_into(msgspec.structs.replace(page, body=b""), head, HEADER.size)
    body = body_parts or (page.body,)
    HEADER.pack_into(head, 0, len(head) - HEADER.size, sum(map(len, body)))
    return head, body
