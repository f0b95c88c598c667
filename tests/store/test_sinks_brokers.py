"""NATS JetStream and RabbitMQ sinks against the machine's real servers: one message per row with its key as id."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aio_pika
import nats
import pytest

from tests.fixtures.broker_fixtures import AMQP_SERVER, NATS_SERVER, queue_messages, stream_messages
from tests.fixtures.tcp_proxy import TcpProxy
from tests.store.sinkdata import ctx, page, products
from webtrawl.errors import ConfigError, SinkUnavailable
from webtrawl.store.registry import open_sink, probe
from webtrawl.store.sinks.broker import BrokerSink
from webtrawl.store.sinks.rows import Rows, What


def _stream(subject: str) -> str:
    return subject.replace(".", "_")


def test_nats_creates_the_stream_and_drops_a_batch_published_again(nats_subject: str) -> None:
    url = f"{NATS_SERVER}/{nats_subject}"
    probe(url, "items")  # creates the stream
    sink = open_sink(url, "items", ctx(Path("/nonexistent")))
    batch = [products("http://a.test/1", 3), page("http://a.test/2", [{"name": "x"}])]
    sink.write(batch)
    sink.write(batch)  # the same batch after a kill and resume: the same ids
    sink.close()
    found = stream_messages(_stream(nats_subject))
    ids = [mid for mid, _ in found]
    assert ids == [f"wt-1700000000/http://a.test/1/{i}" for i in range(3)] + ["wt-1700000000/http://a.test/2/0"]
    body = found[0][1]
    assert body["url"] == "http://a.test/1" and body["idx"] == 0 and body["price"] == 10.5 and body["tags"] == ["a", 0]

    async def window() -> float:
        nc = await nats.connect(NATS_SERVER)
        info = await nc.jetstream().stream_info(_stream(nats_subject))
        await nc.close()
        return float(info.config.duplicate_window or 0)

    assert asyncio.run(window()) == 3600


def test_nats_stream_named_but_the_subject_goes_elsewhere_is_refused(nats_subject: str) -> None:
    probe(f"{NATS_SERVER}/{nats_subject}", "items")  # creates the subject's stream
    with pytest.raises(ConfigError, match=f"goes to stream '{_stream(nats_subject)}', not the one named"):
        probe(f"{NATS_SERVER}/{nats_subject}?stream=other", "items")
    with pytest.raises(ConfigError, match=f"cannot create stream '{_stream(nats_subject)}'.* in use"):
        probe(f"{NATS_SERVER}/{nats_subject}.other?stream={_stream(nats_subject)}", "items")  # taken


def test_nats_server_gone_raises_unavailable_then_the_batch_goes_in_once(nats_subject: str) -> None:
    with TcpProxy(4222) as proxy:
        url = f"nats://127.0.0.1:{proxy.port}/{nats_subject}"
        sink = open_sink(url, "records", ctx(Path("/nonexistent")))
        sink.write([page("http://a.test/1")])
        proxy.cut()
        batch = [page("http://a.test/1"), page("http://a.test/2")]
        with pytest.raises(SinkUnavailable):
            sink.write(batch)
        proxy.restore()
        sink.write(batch)
        sink.close()
    ids = [mid for mid, _ in stream_messages(_stream(nats_subject))]
    assert ids == ["wt-1700000000/http://a.test/1", "wt-1700000000/http://a.test/2"]


def test_amqp_confirms_persistent_messages_with_their_key_as_id(amqp_queue: str) -> None:
    url = f"{AMQP_SERVER}?queue={amqp_queue}"
    sink = open_sink(url, "items", ctx(Path("/nonexistent")))
    sink.write([products("http://a.test/1", 2)])
    sink.close()
    found = queue_messages(amqp_queue)
    assert [(mid, mode) for mid, _, mode in found] == [(f"wt-1700000000/http://a.test/1/{i}", 2) for i in range(2)]
    assert found[1][1]["sku"] == 1


def test_amqp_broker_gone_or_refusing_is_said_by_the_sink_alone_without_aiormqs_tracebacks(
    amqp_queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    with TcpProxy(5672) as proxy:
        sink = open_sink(f"amqp://127.0.0.1:{proxy.port}/%2F?queue={amqp_queue}", "items", ctx(Path("/x")))
        sink.write([products("http://a.test/1", 1)])
        proxy.cut()  # the open connection is dropped: aiormq logged a warning with a traceback
        with pytest.raises(SinkUnavailable):
            sink.write([products("http://a.test/2", 1)])
        sink.close()
    with pytest.raises(ConfigError, match="cannot connect"):  # nothing listens there now: aiormq logged an error
        probe(f"amqp://127.0.0.1:{proxy.port}/%2F?queue={amqp_queue}", "items")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("aiormq") and r.levelno >= 30] == []


def test_amqp_broker_gone_raises_unavailable_then_the_batch_goes_in(amqp_queue: str) -> None:
    with TcpProxy(5672) as proxy:
        sink = open_sink(f"amqp://127.0.0.1:{proxy.port}/%2F?queue={amqp_queue}", "items", ctx(Path("/x")))
        sink.write([products("http://a.test/1", 1)])
        proxy.cut()
        with pytest.raises(SinkUnavailable):
            sink.write([products("http://a.test/2", 1)])
        proxy.restore()
        sink.write([products("http://a.test/2", 1)])
        sink.close()
    ids = {mid for mid, _, _ in queue_messages(amqp_queue)}
    assert ids == {"wt-1700000000/http://a.test/1/0", "wt-1700000000/http://a.test/2/0"}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("nats://127.0.0.1:1/wt.x", "cannot connect"),
        ("nats://s3cret@127.0.0.1:1/wt.x", "cannot connect to nats://***@127.0.0.1:1/wt.x"),  # a token is a secret
        ("nats://127.0.0.1:4222/", "nats://HOST:PORT/SUBJECT"),
        ("nats://127.0.0.1:4222/wt.x?dedup=0", "dedup"),
        ("nats://127.0.0.1:4222/wt.x?durable=1", "unknown option 'durable'"),
        ("nats://127.0.0.1:4222/wt-wild.>", "no subject to publish to"),  # a stream of wt-wild.* waited forever
        ("nats://127.0.0.1:4222/wt-wild.*.x", "no subject to publish to"),
        ("nats://127.0.0.1:4222/wt-wild..x", "no subject to publish to"),
        ("amqp://guest:s3cret@127.0.0.1:5672/%2F?queue=wt-never", "cannot connect"),
        ("amqp://127.0.0.1:5672/%2F", "name a queue"),
        ("amqp://127.0.0.1:5672/wt-no-such-vhost?queue=q", "would not open vhost 'wt-no-such-vhost' (no such vhost"),
        ("amqp://127.0.0.1:5672/%2F?exchange=wt-no-such-exchange", "wt-no-such-exchange"),
    ],
)
def test_bad_broker_target_is_one_line_at_start(url: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        probe(url, "items")
    text = str(info.value)
    assert message in text and "s3cret" not in text and "\n" not in text


def test_amqp_exchange_with_no_queue_bound_pauses_instead_of_losing_rows(amqp_queue: str) -> None:
    exchange = amqp_queue + "-x"

    async def broker(bind: bool) -> None:
        async with await aio_pika.connect(AMQP_SERVER) as conn:
            channel = await conn.channel()
            if not bind:
                await channel.declare_exchange(exchange, aio_pika.ExchangeType.DIRECT, durable=False)
                return
            queue = await channel.declare_queue(amqp_queue, durable=True)
            await queue.bind(exchange, routing_key="rows")

    asyncio.run(broker(bind=False))
    sink = open_sink(f"{AMQP_SERVER}?exchange={exchange}&routing_key=rows", "items", ctx(Path("/x")))
    try:
        with pytest.raises(SinkUnavailable, match="no queue is bound"):
            sink.write([products("http://a.test/1", 2)])
        asyncio.run(broker(bind=True))
        sink.write([products("http://a.test/1", 2)])
    finally:
        sink.close()

        async def drop() -> None:
            async with await aio_pika.connect(AMQP_SERVER) as conn:
                await (await conn.channel()).exchange_delete(exchange)

        asyncio.run(drop())
    assert [mid for mid, _, _ in queue_messages(amqp_queue)] == [f"wt-1700000000/http://a.test/1/{i}" for i in (0, 1)]


class _LostAnswer(BrokerSink):
    """A broker client that never answers a publish (aiormq 6.8 lost the future of one after a cut)."""

    transient = (asyncio.TimeoutError,)
    deadline = 0.2

    def write_rows(self, rows: Rows) -> None:
        self._run(self._never())

    async def _never(self) -> None:
        await asyncio.Event().wait()

    async def _disconnect(self) -> None:
        pass


def test_a_client_that_never_answers_is_a_broker_gone_after_the_write_deadline() -> None:
    sink = _LostAnswer(What.ITEMS, "crawl", "lost", "lost-sink")
    try:
        with pytest.raises(SinkUnavailable, match=r"^lost: TimeoutError$"):
            sink.write([products("http://a.test/1", 1)])
    finally:
        sink.close()


def test_nats_row_over_the_servers_max_payload_is_one_clear_error(nats_subject: str) -> None:
    """A row bigger than the server's max_payload (1 MB by default: a page record with the Markdown of a long page)
    is refused for good; nats-py's MaxPayloadError was taken for an outage, and the crawl waited forever."""
    sink = open_sink(f"{NATS_SERVER}/{nats_subject}", "items", ctx(Path("/nonexistent")))
    sink.write([page("http://a.test/1", [{"n": 1}])])
    with pytest.raises(ConfigError, match=r"the row wt-1700000000/http://a.test/2/0 is \d+ bytes, over the server's"):
        sink.write([page("http://a.test/2", [{"text": "x" * 2_000_000}])])
    sink.close()


def test_amqp_row_over_the_brokers_max_message_size_is_one_clear_error(amqp_queue: str) -> None:
    """RabbitMQ closes the channel on a message over its max_message_size (128 MiB in 3.x, 16 MiB in 4.x): the sink
    took it for an outage, and the crawl waited forever. The row here is over both defaults."""
    sink = open_sink(f"{AMQP_SERVER}?queue={amqp_queue}", "items", ctx(Path("/nonexistent")))
    sink.write([page("http://a.test/1", [{"n": 1}])])
    with pytest.raises(ConfigError, match=r"the row wt-1700000000/http://a.test/2/0 is \d+ bytes, over the broker's"):
        # after rows that fit, in the same batch: theirs fail too, with the channel the broker closed
        sink.write([products("http://a.test/0", 50), page("http://a.test/2", [{"text": "x" * ((128 << 20) + 1000)}])])
    sink.close()
    assert "wt-1700000000/http://a.test/1/0" in [mid for mid, _, _ in queue_messages(amqp_queue)]
