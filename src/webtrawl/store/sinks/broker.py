"""What the message broker sinks (NATS JetStream, AMQP) send: one message per row, JSON, with an id that is the row's
key, so a batch published again after a kill carries the same ids and the broker (JetStream) or the consumer (AMQP)
can drop the copies.

The id is ``crawl/url/idx`` for an item and ``crawl/url`` for a page record (the key a table sink upserts on).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

import msgspec

from webtrawl.errors import SinkUnavailable
from webtrawl.store.base import PageOutput
from webtrawl.store.sinks.rows import RowMaker, Rows, What

T = TypeVar("T")
_ENCODE = msgspec.json.Encoder().encode


def message_id(row: dict[str, Any]) -> str:
    idx = row.get("idx")
    return f"{row['crawl']}/{row['url']}" + ("" if idx is None else f"/{idx}")


def _text(value: Any) -> str:
    return str(value)


def messages(rows: Rows) -> list[tuple[str, bytes]]:
    """(message id, JSON body) of every row; a value JSON has no form for (bytes, say) is sent as its text."""
    out = []
    for row in rows.rows:
        try:
            body = _ENCODE(row)
        except (TypeError, OverflowError):
            body = msgspec.json.Encoder(enc_hook=_text).encode(row)
        out.append((message_id(row), body))
    return out


class LoopThread:
    """A private asyncio event loop in a daemon thread, for a sink whose client library is asyncio (nats-py,
    aio-pika) but whose caller, the parser, is synchronous: :meth:`run` waits there for one coroutine."""

    def __init__(self, name: str, deadline: float) -> None:
        self._name = name
        self._deadline = deadline
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """The coroutine's result; TimeoutError after ``deadline`` s (it is cancelled): a client library that loses
        a future (aiormq 6.8 did, under a broker cut) would otherwise hold the parser forever."""
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name=self._name, daemon=True)
            self._thread.start()
        return asyncio.run_coroutine_threadsafe(asyncio.wait_for(coro, self._deadline), self._loop).result()

    def stop(self) -> None:
        if self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)
        self._loop.close()
        self._loop = self._thread = None


class BrokerSink:
    """What the broker sinks share: a batch's rows become messages published on a private loop, each write waits
    for the broker's acknowledgements, and an error of ``transient`` disconnects and becomes
    :class:`SinkUnavailable` (the crawl pauses and retries the batch). Subclasses give ``write_rows``, ``probe``,
    ``_publish`` and ``_disconnect``."""

    transient: tuple[type[BaseException], ...] = ()
    deadline = 120.0  # for one write, past the clients' own timeouts (connect and publish: 30 s each at most)

    def __init__(self, what: What, crawl_id: str, name: str, thread: str) -> None:
        self.name = name
        self.rows = RowMaker(what, crawl_id)
        self._loop = LoopThread(thread, self.deadline)

    def write(self, batch: Sequence[PageOutput]) -> None:
        self.write_rows(self.rows(batch))

    def write_rows(self, rows: Rows) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Every write already waited for its acknowledgements."""

    def close(self) -> None:
        with contextlib.suppress(SinkUnavailable):
            self._run(self._disconnect())
        self._loop.stop()

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        try:
            return self._loop.run(coro)
        except self.transient as exc:
            self._loop.run(self._disconnect())
            raise SinkUnavailable(f"{self.name}: {self._why(exc)}") from exc

    def _why(self, exc: BaseException) -> str:
        return str(exc).strip() or type(exc).__name__

    async def _disconnect(self) -> None:
        raise NotImplementedError
