"""``amqp://USER:PW@HOST:5672/VHOST?queue=NAME`` or ``?exchange=NAME&routing_key=KEY``: rows to RabbitMQ.

One persistent message per row (its JSON, ``content_type`` application/json) with ``message_id`` = ``crawl/url/idx``
(``crawl/url`` for a page record), on a channel in publisher-confirm mode: a write returns when the broker has
confirmed every message, so a batch is never completed in the crawl before it is in the broker. The guarantee is
*at least once*: a batch in flight at a kill -9 is published again after the resume, with the same ids, and
consumers drop the copies by ``message_id``.

``queue=NAME`` declares a durable queue and publishes to it through the default exchange; ``exchange=NAME`` must
exist already (its type and bindings are the user's), and a message no queue is bound for comes back (``mandatory``):
the crawl pauses rather than lose it. A broker that goes away raises :class:`~webtrawl.errors.SinkUnavailable`; the
next write connects again.

aio-pika, on a private event loop (:class:`~webtrawl.store.sinks.broker.LoopThread`): the messages of a batch are all
in flight at once, so one disk sync of the broker confirms many (a blocking client waiting for each confirm in turn
managed 200 rows/s here).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import urllib.parse
from typing import TypeVar

from webtrawl.errors import ConfigError, SinkUnavailable
from webtrawl.formats.sinkurl import SinkUrl
from webtrawl.optional import missing_extra
from webtrawl.store.base import Sink, SinkContext
from webtrawl.store.sinks.broker import BrokerSink, messages
from webtrawl.store.sinks.rows import Rows, What

try:
    import aio_pika
    import aio_pika.abc
    import aio_pika.exceptions
    import pamqp.exceptions  # aiormq's dependency
except ImportError as exc:  # pragma: no cover - the extra is in dev
    raise missing_extra(exc, needed_by="the amqp sink", extra="amqp", package="aio-pika") from None

T = TypeVar("T")
_OURS = ("queue", "exchange", "routing_key")
_TIMEOUT_S = 30.0
_IN_FLIGHT = 1024  # messages awaiting their confirm at once
# A broker lost, refused, closing a channel (a queue deleted meanwhile), or not confirming in time.
_TRANSIENT = (
    aio_pika.exceptions.AMQPError,
    aio_pika.exceptions.ChannelInvalidStateError,
    aio_pika.exceptions.AMQPException,
    OSError,
    asyncio.TimeoutError,
)
# What RabbitMQ closes the channel with on a message over its max_message_size (128 MiB in 3.x, 16 MiB in 4.x).
_TOO_BIG = re.compile(r"message size (\d+) is larger than configured max size (\d+)")
# How aiormq tells of a connection refused, lost or closed by the broker (the second with a traceback).
_LOST = ("error when creating transport", "Cancelling cause reader exited abnormally", "Unexpected connection close")
log = logging.getLogger("webtrawl.store")


class _Quiet(logging.Filter):
    """aiormq logs a lost or refused connection itself; the write's SinkUnavailable (the crawl's pause line) or the
    probe's ConfigError says it once."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(_LOST):
            log.debug("aiormq: %s", record.getMessage())
            return False
        return True


logging.getLogger("aiormq.connection").addFilter(_Quiet())


class AmqpTarget:
    """The parts of an ``amqp://`` sink URL: the broker's URL, and where to publish."""

    def __init__(self, url: str, name: str) -> None:
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        options = {k: v for k, v in query if k in _OURS}
        rest = urllib.parse.urlencode([(k, v) for k, v in query if k not in _OURS])
        if not parts.hostname:
            raise ConfigError(f"sink {name!r}: write amqp://USER:PASSWORD@HOST:PORT/VHOST?queue=NAME")
        self.server = urllib.parse.urlunsplit(parts._replace(query=rest))
        self.queue = options.get("queue", "")
        self.exchange = options.get("exchange", "")
        if bool(self.queue) == bool(self.exchange):
            raise ConfigError(f"sink {name!r}: name a queue (?queue=NAME) or an exchange (?exchange=NAME)")
        self.routing_key = self.queue or options.get("routing_key", "")


class AmqpSink(BrokerSink):
    transient = _TRANSIENT

    def __init__(self, url: str, what: What, crawl_id: str, name: str) -> None:
        super().__init__(what, crawl_id, name, "amqp-sink")
        self.what = what
        self.target = AmqpTarget(url, name)
        self._conn: aio_pika.abc.AbstractConnection | None = None
        self._exchange: aio_pika.abc.AbstractExchange | None = None

    def write_rows(self, rows: Rows) -> None:
        """Every row is confirmed by the broker when this returns."""
        found = messages(rows)
        if not found:
            return
        reused = self._exchange is not None
        try:
            self._run(self._publish(found))
        except SinkUnavailable:
            if not reused:
                raise
            self._run(self._publish(found))  # an idle connection the broker dropped: one fresh try before pausing

    def probe(self) -> None:
        """At start: connect, and declare the queue or find the exchange. ConfigError if not."""
        try:
            self._loop.run(self._open())
        except aio_pika.exceptions.ChannelClosed as exc:  # no such exchange, a queue declared otherwise
            raise ConfigError(f"{self.name}: {_why(exc, self.target)}") from None
        except (*_TRANSIENT, pamqp.exceptions.PAMQPException) as exc:  # (older aiormq: pamqp's for a closed vhost)
            raise ConfigError(f"cannot connect to {self.name}: {_why(exc, self.target)}") from None
        finally:
            self.close()

    def _why(self, exc: BaseException) -> str:
        return _why(exc, self.target)

    async def _open(self) -> aio_pika.abc.AbstractExchange:
        if self._exchange is not None and self._conn is not None and not self._conn.is_closed:
            return self._exchange
        await self._disconnect()
        self._conn = await aio_pika.connect(self.target.server, timeout=_TIMEOUT_S)
        channel = await self._conn.channel(publisher_confirms=True, on_return_raises=True)
        if self.target.queue:
            await channel.declare_queue(self.target.queue, durable=True)
            self._exchange = channel.default_exchange
        else:
            self._exchange = await channel.get_exchange(self.target.exchange, ensure=True)
        return self._exchange

    async def _disconnect(self) -> None:
        conn, self._conn, self._exchange = self._conn, None, None
        if conn is not None and not conn.is_closed:
            with contextlib.suppress(*_TRANSIENT):
                await asyncio.wait_for(conn.close(), _TIMEOUT_S)

    async def _publish(self, found: list[tuple[str, bytes]]) -> None:
        exchange = await self._open()
        key = self.target.routing_key
        kind = self.what.value
        for start in range(0, len(found), _IN_FLIGHT):
            sends = [
                exchange.publish(
                    aio_pika.Message(
                        body,
                        message_id=mid,
                        delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
                        content_type="application/json",
                        app_id="webtrawl",
                        type=kind,
                    ),
                    routing_key=key,
                    mandatory=True,
                    timeout=_TIMEOUT_S,
                )
                for mid, body in found[start : start + _IN_FLIGHT]
            ]
            for done in await asyncio.gather(*sends, return_exceptions=True):
                if isinstance(done, BaseException):
                    self._refused_for_good(done, found[start : start + _IN_FLIGHT])
                    raise done

    def _refused_for_good(self, exc: BaseException, sent: list[tuple[str, bytes]]) -> None:
        """ConfigError for a message over the broker's max_message_size: the broker closes the channel on it, which
        looked like an outage, and the crawl waited for it forever."""
        too_big = _TOO_BIG.search(str(exc))
        if too_big is None:
            return
        mid, body = max(sent, key=lambda message: len(message[1]))
        raise ConfigError(
            f"{self.name}: the row {mid} is {len(body)} bytes, over the broker's max_message_size"
            f" ({too_big.group(2)}): raise max_message_size in RabbitMQ's configuration, then resume"
        )


def _why(exc: BaseException, target: AmqpTarget) -> str:
    if isinstance(exc, aio_pika.exceptions.PublishError):
        return f"no queue is bound to exchange {target.exchange!r} for the rows (returned unroutable)"
    text = str(exc).strip() or type(exc).__name__
    if "Connection.OpenOk" in text:  # aiormq's words for the broker's Connection.Close, whose reason it drops
        vhost = urllib.parse.unquote(urllib.parse.urlsplit(target.server).path[1:]) or "/"
        return f"the broker would not open vhost {vhost!r} (no such vhost, or the user has no access to it)"
    return text.splitlines()[0]


def open_amqp(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    if spec.table is not None:
        raise ConfigError(f"sink {spec.name!r}: takes no ?table (it publishes messages)")
    return AmqpSink(spec.target, What(stream), ctx.crawl_id, spec.name)
