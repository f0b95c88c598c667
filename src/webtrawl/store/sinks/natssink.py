"""``nats://HOST:PORT/SUBJECT?stream=NAME&dedup=SECONDS``: items or page records published to a JetStream stream.

One message per row (its JSON) with the header ``Nats-Msg-Id`` = ``crawl/url/idx`` (``crawl/url`` for a page record),
published with acks: a write returns when the stream has stored every row. A batch published again after a kill -9
and a resume carries the same ids, and JetStream drops a message whose id it saw within the stream's duplicate
window: the stream holds each row exactly once as long as the resume comes within that window.

The stream is the one that already takes SUBJECT; if none does, it is created (file storage, named ``stream`` or
SUBJECT with every character JetStream refuses in a name turned into ``_``, duplicate window ``dedup`` seconds,
default 3600). An existing stream is never changed (its own duplicate window applies).

nats-py is asyncio: the sink runs a private event loop in a thread of its own and waits for each batch there. A
server that cannot be reached, or does not ack in time, raises :class:`~webtrawl.errors.SinkUnavailable` (the crawl
pauses); the next write connects again and publishes the whole batch again (the ids make that harmless).
"""

from __future__ import annotations

import asyncio
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
    import nats
    import nats.errors
    import nats.js.errors
    from nats.aio.client import Client
    from nats.js import JetStreamContext
except ImportError as exc:  # pragma: no cover - the extra is in dev
    raise missing_extra(exc, needed_by="the nats sink", extra="nats", package="nats-py") from None

T = TypeVar("T")
log = logging.getLogger("webtrawl.store")
DEFAULT_DEDUP_S = 3600.0
_TIMEOUT_S = 10.0
_HEADERS = 64  # the bytes a message's header block adds beside its id ("NATS/1.0", "Nats-Msg-Id: ", line ends)
_NAME_BAD = re.compile(r"[^A-Za-z0-9_-]")
_TRANSIENT = (nats.errors.Error, OSError, asyncio.TimeoutError, nats.js.errors.ServiceUnavailableError)


async def _quiet(exc: Exception) -> None:
    """nats-py logs every failed try with a traceback; the write's SinkUnavailable says it once."""
    log.debug("nats: %s", exc)


class NatsTarget:
    """The parts of a ``nats://`` sink URL."""

    def __init__(self, url: str, name: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.subject = urllib.parse.unquote(parts.path.lstrip("/"))
        if not parts.hostname or not self.subject or " " in self.subject:
            raise ConfigError(f"sink {name!r}: write nats://HOST:PORT/SUBJECT")
        if any(token in ("", "*", ">") for token in self.subject.split(".")):  # the stream would take many subjects
            raise ConfigError(f"sink {name!r}: {self.subject!r} is no subject to publish to (a * or > wildcard, or ..)")
        self.server = urllib.parse.urlunsplit(("nats", parts.netloc, "", "", ""))
        options = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        unknown = set(options) - {"stream", "dedup"}
        if unknown:
            raise ConfigError(f"sink {name!r}: unknown option {sorted(unknown)[0]!r} (use stream, dedup)")
        self.named = bool(options.get("stream"))
        self.stream = options.get("stream") or _NAME_BAD.sub("_", self.subject)
        try:
            self.dedup_s = float(options.get("dedup", DEFAULT_DEDUP_S))
        except ValueError:
            self.dedup_s = -1
        if not self.dedup_s > 0:
            raise ConfigError(f"sink {name!r}: dedup is the duplicate window in seconds, > 0")


class NatsSink(BrokerSink):
    transient = _TRANSIENT

    def __init__(self, url: str, what: What, crawl_id: str, name: str) -> None:
        super().__init__(what, crawl_id, name, "nats-sink")
        self.target = NatsTarget(url, name)
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self.stream = ""  # the stream that takes the subject, once connected

    def write_rows(self, rows: Rows) -> None:
        """Every row is stored in the stream (acked) when this returns."""
        found = messages(rows)
        if found:
            self._run(self._publish(found))

    def probe(self) -> None:
        """At start: reach the server and find or create the stream. ConfigError if not."""
        try:
            self._run(self._connect())
        except SinkUnavailable as exc:
            raise ConfigError(f"cannot connect to {exc}") from None

    async def _connect(self) -> JetStreamContext:
        if self._js is not None and self._nc is not None and self._nc.is_connected:
            return self._js
        await self._disconnect()
        self._nc = await nats.connect(
            self.target.server,
            name="webtrawl",
            connect_timeout=5,
            allow_reconnect=False,  # a lost connection fails the write: the fan-out pauses, the next write connects
            max_reconnect_attempts=1,  # nats-py's count for the first connect too: two tries, then NoServersError
            reconnect_time_wait=0.5,
            error_cb=_quiet,
        )
        js = self._nc.jetstream(timeout=_TIMEOUT_S)
        target = self.target
        try:
            self.stream = await js.find_stream_name_by_subject(target.subject)
        except nats.js.errors.NotFoundError:
            try:
                await js.add_stream(
                    name=target.stream, subjects=[target.subject], duplicate_window=target.dedup_s, storage="file"
                )
            except nats.js.errors.BadRequestError as exc:  # the name is taken by a stream of other subjects...
                raise ConfigError(f"{self.name}: cannot create stream {target.stream!r}: {exc.description}") from None
            self.stream = target.stream
        except nats.errors.NoRespondersError:
            raise ConfigError(f"{self.name}: the server has no JetStream (start it with -js)") from None
        if target.named and self.stream != target.stream:
            named = f"subject {target.subject!r} goes to stream {self.stream!r}, not the one named"
            raise ConfigError(f"{self.name}: {named}")
        self._js = js
        return js

    async def _disconnect(self) -> None:
        nc, self._nc, self._js = self._nc, None, None
        if nc is not None and not nc.is_closed:
            try:
                await asyncio.wait_for(nc.close(), _TIMEOUT_S)
            except (*_TRANSIENT, asyncio.CancelledError):
                pass

    async def _publish(self, found: list[tuple[str, bytes]]) -> None:
        js = await self._connect()
        subject = self.target.subject
        most = self._nc.max_payload if self._nc is not None else 0
        for mid, body in found:  # the server refuses it for good, and nats-py says so as if it were an outage
            if most and len(body) + len(mid) + _HEADERS > most:
                raise ConfigError(
                    f"{self.name}: the row {mid} is {len(body)} bytes, over the server's max_payload ({most}):"
                    " raise max_payload in the NATS server's configuration, then resume"
                )
        pending = {await js.publish_async(subject, body, headers={"Nats-Msg-Id": mid}) for mid, body in found}
        # publish_async's futures have no time limit, and outlive a lost connection: watch both here
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _TIMEOUT_S + len(found) / 1000
        while pending:
            done, pending = await asyncio.wait(pending, timeout=0.25)
            for ack in done:
                ack.result()  # an error the server answered with
            if pending and self._nc is not None and not self._nc.is_connected:
                raise nats.errors.ConnectionClosedError
            if pending and loop.time() > deadline:
                raise nats.errors.TimeoutError


def open_nats(spec: SinkUrl, stream: str, ctx: SinkContext) -> Sink:
    if spec.table is not None:
        raise ConfigError(f"sink {spec.name!r}: takes no ?table (it publishes messages)")
    return NatsSink(spec.target, What(stream), ctx.crawl_id, spec.name)
