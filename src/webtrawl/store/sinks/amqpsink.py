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
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import Sequence
from typing import Any

from webtrawl.errors import ConfigError, SinkUnavailable
from webtrawl.store.base import PageOutput
from webtrawl.store.sinks.broker import messages
from webtrawl.store.sinks.rows import RowMaker, Rows, What

try:
    import pika
    import pika.exceptions
except ImportError:  # pragma: no cover - the extra is in dev
    raise ConfigError("the amqp sink needs pika: pip install 'webtrawl[amqp]'") from None

_OURS = ("queue", "exchange", "routing_key")
_TRANSIENT: tuple[type[BaseException], ...] = (pika.exceptions.AMQPError, OSError)


class AmqpTarget:
    """The parts of an ``amqp://`` sink URL: pika's connection parameters, and where to publish."""

    def __init__(self, url: str, name: str) -> None:
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        options = {k: v for k, v in query if k in _OURS}
        rest = urllib.parse.urlencode([(k, v) for k, v in query if k not in _OURS])
        try:
            self.params = pika.URLParameters(urllib.parse.urlunsplit(parts._replace(query=rest)))
        except (ValueError, TypeError) as exc:
            raise ConfigError(f"sink {name!r}: {exc}") from None
        self.queue = options.get("queue", "")
        self.exchange = options.get("exchange", "")
        if bool(self.queue) == bool(self.exchange):
            raise ConfigError(f"sink {name!r}: name a queue (?queue=NAME) or an exchange (?exchange=NAME)")
        self.routing_key = self.queue or options.get("routing_key", "")


class AmqpSink:
    def __init__(self, url: str, what: What, crawl_id: str, name: str) -> None:
        self.name = name
        self.what = what
        self.target = AmqpTarget(url, name)
        self.rows = RowMaker(what, crawl_id)
        self._conn: Any = None  # pika.BlockingConnection
        self._channel: Any = None

    def write(self, batch: Sequence[PageOutput]) -> None:
        self.write_rows(self.rows(batch))

    def write_rows(self, rows: Rows) -> None:
        """Every row is confirmed by the broker when this returns."""
        found = messages(rows)
        if not found:
            return
        reused = self._conn is not None
        try:
            self._publish(found)
        except _TRANSIENT as exc:
            self.close()
            if not reused:
                raise self._unavailable(exc) from exc
            try:  # an idle connection the broker dropped (missed heartbeats): one fresh try before pausing
                self._publish(found)
            except _TRANSIENT as again:
                self.close()
                raise self._unavailable(again) from again

    def flush(self) -> None:
        """Every write already waited for its confirms."""

    def close(self) -> None:
        conn, self._conn, self._channel = self._conn, None, None
        if conn is not None and conn.is_open:
            with contextlib.suppress(*_TRANSIENT):
                conn.close()

    def probe(self) -> None:
        """At start: connect, and declare the queue or find the exchange. ConfigError if not."""
        try:
            self._open()
        except pika.exceptions.ChannelClosedByBroker as exc:
            raise ConfigError(f"{self.name}: {exc.reply_text}") from None
        except _TRANSIENT as exc:
            raise ConfigError(f"cannot connect to {self._unavailable(exc)}") from None
        finally:
            self.close()

    def _unavailable(self, exc: BaseException) -> SinkUnavailable:
        if isinstance(exc, pika.exceptions.UnroutableError):
            return SinkUnavailable(f"{self.name}: no queue is bound to exchange {self.target.exchange!r} for the rows")
        return SinkUnavailable(f"{self.name}: {str(exc).strip() or type(exc).__name__}")

    def _open(self) -> Any:
        if self._channel is None or not self._channel.is_open:
            self.close()
            self._conn = pika.BlockingConnection(self.target.params)
            channel = self._conn.channel()
            if self.target.queue:
                channel.queue_declare(self.target.queue, durable=True)
            else:
                channel.exchange_declare(self.target.exchange, passive=True)
            channel.confirm_delivery()
            self._channel = channel
        return self._channel

    def _publish(self, found: list[tuple[str, bytes]]) -> None:
        channel = self._open()
        target = self.target
        for mid, body in found:
            properties = pika.BasicProperties(
                message_id=mid,
                delivery_mode=pika.DeliveryMode.Persistent,
                content_type="application/json",
                app_id="webtrawl",
                type=self.what.value,
            )
            channel.basic_publish(target.exchange, target.routing_key, body, properties, mandatory=True)
