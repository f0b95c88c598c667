"""The fetcher -> parser channel: whole pages arrive, a dead parser costs nothing but a resend."""

from __future__ import annotations

import asyncio
import socket
import struct
from pathlib import Path

import msgspec
import uvloop

from webtrawl.messages import Lease, Page
from webtrawl.pagepipe import BARRIER, PageReceiver, frame
from webtrawl.pagesend import PageSender, parsers_caught_up


def _page(i: int, size: int = 10) -> Page:
    lease = Lease(token=f"n/f0.0-{i}", shard=0, host="a.test", url=f"http://a.test/{i}")
    return Page(lease=lease, status=200, headers=[("Content-Type", "text/html")], body=bytes([i % 256]) * size)


def _receive(receiver: PageReceiver, count: int) -> list[Page]:
    pages: list[Page] = []
    for _ in range(1000):
        pages += receiver.poll(timeout=0.05)
        if len(pages) >= count:
            break
    return pages


def _through_pipe(receiver: PageReceiver, sent: list[Page], parts: int = 0) -> list[Page]:
    """Send ``sent`` from one fetcher-side sender while ``receiver`` polls; the pages it received. With ``parts``,
    each body goes in that many pieces (a body the client left in its chunks), ``page.body`` empty."""

    async def send() -> None:
        sender = PageSender([receiver.path])
        for page in sent:
            if parts:
                step = -(-len(page.body) // parts) or 1
                pieces = [page.body[at : at + step] for at in range(0, len(page.body), step)]
                await sender.send(msgspec.structs.replace(page, body=b""), pieces)
            else:
                await sender.send(page)
        await sender.close()

    async def main() -> list[Page]:
        task = asyncio.create_task(send())
        pages: list[Page] = []
        while len(pages) < len(sent) and not (task.done() and task.exception()):
            pages += await asyncio.to_thread(receiver.poll, 0.05)
        await task  # raises what the sender raised
        return pages

    return asyncio.run(main())


def test_pages_arrive_whole_and_in_order(tmp_path: Path) -> None:
    receiver = PageReceiver(tmp_path / "p0.sock")
    sent = [_page(i, size=300_000) for i in range(20)]  # larger than the socket buffers together

    try:
        assert _through_pipe(receiver, sent) == sent
    finally:
        receiver.close()


def test_a_body_bigger_than_the_socket_buffers_arrives_whole_between_small_pages(tmp_path: Path) -> None:
    receiver = PageReceiver(tmp_path / "p0.sock")
    sent = [_page(1), _page(2, size=5_000_000), _page(3), _page(4, size=3_000_000), _page(5, size=1)]

    try:
        assert _through_pipe(receiver, sent) == sent
    finally:
        receiver.close()


def test_bodies_sent_in_parts_arrive_as_one_body(tmp_path: Path) -> None:
    receiver = PageReceiver(tmp_path / "p0.sock")
    sent = [_page(1), _page(2, size=5_000_000), _page(3, size=0), _page(4, size=300_000), _page(5, size=1)]

    try:
        assert _through_pipe(receiver, sent, parts=7) == sent
    finally:
        receiver.close()


def test_big_fields_and_big_bodies_arrive_whole(tmp_path: Path) -> None:
    """Bodies past the receive buffer are read into their own buffer; a page whose other fields (a rendered DOM)
    are bigger than that buffer grows it; either way every byte arrives, in order with the small pages around."""
    receiver = PageReceiver(tmp_path / "p0.sock")
    lease = Lease(token="n/f0.0-1", shard=0, host="a.test", url="http://a.test/x")
    dom = bytes(range(256)) * (2_000_000 // 256)
    sent = [
        _page(1),
        Page(lease=lease, status=200, body=bytes(range(7, 256)) * 12_000, dom=dom, render_reason="always"),
        _page(2, size=1_048_577),
        Page(lease=lease, status=200, body=b"<p>small</p>", dom=dom, render_reason="always"),
        _page(3, size=12_000_000),
        _page(4),
    ]

    try:
        assert _through_pipe(receiver, sent) == sent
    finally:
        receiver.close()


def test_a_frame_announcing_more_than_the_frame_cap_drops_the_connection(tmp_path: Path) -> None:
    receiver = PageReceiver(tmp_path / "p.sock")
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(tmp_path / "p.sock"))
    client.sendall(struct.pack(">II", 10, 1 << 31) + b"x" * 10)
    for _ in range(20):
        assert receiver.poll(timeout=0.01) == []
    assert receiver.connections == 0  # while the fetcher's end is still open
    client.close()
    receiver.close()


def test_every_field_of_a_page_arrives_byte_exact(tmp_path: Path) -> None:
    """The body travels beside the rest of the page: empty bodies, bodies that look like frames, rendered pages."""
    receiver = PageReceiver(tmp_path / "p0.sock")
    lease = Lease(token="n/f0.0-1", shard=0, host="a.test", url="http://a.test/x")
    sent = [
        Page(lease=lease, error="timeout", error_detail="timed out"),
        Page(lease=lease, status=200, body=struct.pack(">II", 0, 5) + bytes(range(256)) * 700, truncated=True),
        Page(lease=lease, status=200, body=b"<p>rendered</p>", dom=b"<p>dom</p>", render_reason="always"),
        Page(lease=lease, status=304, headers=[("ETag", '"x"')], request_headers=[("If-None-Match", '"x"')]),
    ]

    try:
        assert _through_pipe(receiver, sent) == sent
    finally:
        receiver.close()


def test_a_dead_parser_is_skipped_and_the_page_goes_to_a_live_one(tmp_path: Path) -> None:
    dead = PageReceiver(tmp_path / "dead.sock")
    live = PageReceiver(tmp_path / "live.sock")

    async def main() -> list[Page]:
        sender = PageSender([tmp_path / "dead.sock", tmp_path / "live.sock"])
        await sender.send(_page(0))
        await sender.send(_page(1))  # round robin: one page each
        early = await asyncio.to_thread(_receive, dead, 1) + await asyncio.to_thread(_receive, live, 1)
        assert sorted(p.lease.url for p in early) == ["http://a.test/0", "http://a.test/1"]
        dead.close()  # the parser process died
        for i in range(2, 6):
            await sender.send(_page(i))
        await sender.close()
        return await asyncio.to_thread(_receive, live, 4)

    try:
        assert [p.lease.url for p in asyncio.run(main())] == [f"http://a.test/{i}" for i in range(2, 6)]
    finally:
        live.close()


def test_a_partial_frame_from_a_dead_fetcher_is_discarded(tmp_path: Path) -> None:
    receiver = PageReceiver(tmp_path / "p.sock")
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(str(tmp_path / "p.sock"))
    client.sendall(struct.pack(">II", 10, 990) + b"x" * 10)  # announces 1000 bytes, sends 10, dies
    client.close()
    for _ in range(20):
        assert receiver.poll(timeout=0.01) == []
    assert receiver.connections == 0
    receiver.close()


def test_a_busy_parser_is_passed_over_while_another_is_free(tmp_path: Path) -> None:
    """A parser stuck on one page (a bomb, a huge page) holds that page only: the fetcher's other pages go to the
    free parser instead of waiting in turn behind it, each encoded only when its socket takes it."""
    stuck = PageReceiver(tmp_path / "stuck.sock")  # not polled until the end: its socket fills and stays full
    live = PageReceiver(tmp_path / "live.sock")
    sent = [_page(i, size=3_000_000) for i in range(12)]  # each larger than the socket buffers

    async def main() -> list[Page]:
        sender = PageSender([tmp_path / "stuck.sock", tmp_path / "live.sock"])
        tasks = [asyncio.create_task(sender.send(page)) for page in sent]
        received = await asyncio.to_thread(_receive, live, len(sent) - 1)
        done, pending = await asyncio.wait(tasks, timeout=0)
        assert len(done) == len(sent) - 1 and len(pending) == 1
        received += await asyncio.to_thread(_receive, stuck, 1)  # the busy parser comes back for its one page
        await asyncio.wait(pending)
        await sender.close()
        return received

    try:
        received = asyncio.run(main())
        assert sorted(p.lease.url for p in received) == sorted(p.lease.url for p in sent)
    finally:
        stuck.close()
        live.close()


def _dead_fetcher(path: Path, pages: list[Page], partial: Page) -> None:
    """What a fetcher killed mid-write leaves in a parser's socket: whole frames, half of one, then its end."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(str(path))
    for page in pages:
        head, body = frame(page)
        conn.sendall(bytes(head) + b"".join(body))
    head, body = frame(partial)
    conn.sendall(bytes(head) + b"".join(body)[:5])
    conn.close()


def test_a_restarted_fetcher_hears_back_once_its_dead_lifes_pages_are_with_the_parser(tmp_path: Path) -> None:
    """The catch-up barrier: the parser answers only after it was handed every whole page the dead fetcher had
    written (and stored them: the caller answers after its batch), and the fetcher waits for that answer."""
    receiver = PageReceiver(tmp_path / "p0.sock")
    sent = [_page(i, size=30_000) for i in range(4)]  # what the socket holds without a reader
    _dead_fetcher(receiver.path, sent, _page(9))

    async def main() -> list[Page]:
        asking = asyncio.create_task(parsers_caught_up([receiver.path], timeout=60))
        pages: list[Page] = []
        while not receiver.asked:
            pages += await asyncio.to_thread(receiver.poll, 0.05)
        assert [p.lease.url for p in pages] == [p.lease.url for p in sent]
        done, _ = await asyncio.wait([asking], timeout=0.2)
        assert not done  # no answer yet: the pages are not stored
        receiver.answer()
        assert await asking == 0
        return pages

    try:
        asyncio.run(main())
        for _ in range(100):  # the dead connection (its cut frame discarded) and the barrier's are closed
            if receiver.connections == 0:
                break
            assert receiver.poll(timeout=0.05) == []
        assert receiver.connections == 0 and not receiver.asked
    finally:
        receiver.close()


def test_the_poll_that_finds_a_barrier_returns_what_every_connection_holds(tmp_path: Path) -> None:
    """A poll stops reading at ``max_pages``; one that found a barrier reads on, whatever order the sockets come
    in: a live fetcher's pages read first must not leave the dead one's behind the answer."""
    receiver = PageReceiver(tmp_path / "p0.sock")
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    barrier = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        for conn in (live, barrier):
            conn.connect(str(receiver.path))
        busy = [_page(i) for i in range(100, 110)]
        live.sendall(b"".join(bytes(head) + b"".join(body) for head, body in map(frame, busy)))
        barrier.sendall(BARRIER)
        sent = [_page(i) for i in range(3)]
        _dead_fetcher(receiver.path, sent, _page(9))
        pages: list[Page] = []
        while not receiver.asked:
            pages += receiver.poll(timeout=0.05, max_pages=1)
        assert {p.lease.url for p in sent} <= {p.lease.url for p in pages}
        receiver.answer()
        assert barrier.recv(1) == b"\x01"
    finally:
        live.close()
        barrier.close()
        receiver.close()


def test_a_parser_that_is_not_listening_holds_nothing_and_one_that_never_answers_is_counted(tmp_path: Path) -> None:
    silent = PageReceiver(tmp_path / "silent.sock")  # never polled
    try:
        gone = tmp_path / "gone.sock"
        assert asyncio.run(parsers_caught_up([gone], timeout=60)) == 0
        assert asyncio.run(parsers_caught_up([gone, silent.path], timeout=0.1)) == 1
    finally:
        silent.close()


def test_a_stop_ends_the_wait_for_a_parser_that_never_answers(tmp_path: Path) -> None:
    """A fetcher restarted while the node is stopping gives up the barrier (None) instead of waiting out a stuck
    parser for the whole timeout; not stopped, the same parser is counted late."""
    silent = PageReceiver(tmp_path / "silent.sock")  # never polled: it never answers

    async def main() -> tuple[int | None, int | None]:
        stop = asyncio.Event()
        asking = asyncio.create_task(parsers_caught_up([silent.path], timeout=3600, stopped=stop.is_set))
        done, _ = await asyncio.wait([asking], timeout=0.3)
        assert not done  # waiting for the parser
        stop.set()
        return await asking, await parsers_caught_up([silent.path], timeout=0.1, stopped=lambda: False)

    try:
        assert asyncio.run(main()) == (None, 1)
    finally:
        silent.close()


def test_the_pages_a_parser_dies_with_unconfirmed_are_reported_lost(tmp_path: Path) -> None:
    """A parser confirms what it stored after each batch; when it dies, the fetcher hands the leases of the pages it
    had not confirmed to ``on_lost`` (to take them back), and none of the confirmed ones."""
    receiver = PageReceiver(tmp_path / "p0.sock")
    lost: list[tuple[int, str]] = []
    stored, unstored = [_page(i) for i in range(4)], [_page(i) for i in range(4, 6)]

    async def main() -> None:
        sender = PageSender([receiver.path], on_lost=lost.extend)
        for page in stored:
            await sender.send(page)
        assert len(await asyncio.to_thread(_receive, receiver, len(stored))) == len(stored)
        receiver.acknowledge()  # the batch is stored
        for page in unstored:
            await sender.send(page)
        assert len(await asyncio.to_thread(_receive, receiver, len(unstored))) == len(unstored)
        receiver.close()  # the parser dies before its next batch is stored
        while not lost:
            await asyncio.sleep(0.01)
        await sender.close()

    asyncio.run(main())
    assert lost == [(p.lease.shard, p.lease.token) for p in unstored]


def test_a_fetcher_that_closes_its_connections_loses_nothing(tmp_path: Path) -> None:
    receiver = PageReceiver(tmp_path / "p0.sock")
    lost: list[tuple[int, str]] = []

    async def main() -> None:
        sender = PageSender([receiver.path], on_lost=lost.extend)
        await sender.send(_page(1))
        assert len(await asyncio.to_thread(_receive, receiver, 1)) == 1
        await sender.close()  # the parser still has the page unconfirmed: it stores it, nothing is lost

    try:
        asyncio.run(main())
        assert lost == []
    finally:
        receiver.close()


def test_a_link_whose_transport_closed_before_its_watch_heard_is_passed_over(tmp_path: Path) -> None:
    """A parser's hang-up closes the transport one loop turn before the link's watch task marks it closed; a page
    sent in between went to uvloop's ``writelines`` on a closed transport, which raises: the fetch task failed and
    its page was fetched again. Now that link counts as gone and the page goes to another parser."""
    first, second = PageReceiver(tmp_path / "p0.sock"), PageReceiver(tmp_path / "p1.sock")

    async def main() -> list[Page]:
        sender = PageSender([first.path, second.path])
        await sender.send(_page(0))  # p0, then p1: each sender link is open
        await sender.send(_page(1))
        link = sender._peers[0].link  # the state between the transport's close and the watch's wake-up
        assert link is not None
        link.writer.transport.abort()
        await asyncio.sleep(0)  # one loop turn: uvloop has closed the handle, the watch task has not run yet
        assert link.open and "closed=True" in repr(link.writer.transport)
        await sender.send(_page(2))
        await sender.close()
        return await asyncio.to_thread(_receive, second, 2)

    try:
        assert [p.lease.url for p in uvloop.run(main())] == ["http://a.test/1", "http://a.test/2"]
    finally:
        first.close()
        second.close()


def test_a_page_that_cannot_be_framed_arrives_as_an_error_page_for_its_url(tmp_path: Path) -> None:
    """A field no encoder takes (a bug: a lone surrogate, as aiohttp once left in a non-UTF-8 reason phrase) must
    not kill the fetch task: its URL's lease is already the parsers', so it would wait out --process-ttl, be fetched
    again and fail again. The parsers get an error page for it instead, then the pages after it as usual."""
    receiver = PageReceiver(tmp_path / "p0.sock")
    broken = msgspec.structs.replace(_page(1), reason="Tr\udce8s bien", keep_until=123.5)
    try:
        got = _through_pipe(receiver, [broken, _page(2)])
    finally:
        receiver.close()
    assert [(p.lease.token, p.error, p.keep_until) for p in got] == [
        (broken.lease.token, "fetch-bug", 123.5),
        (_page(2).lease.token, "", 0.0),
    ]
    assert "could not be sent to a parser" in got[0].error_detail and got[1].body == _page(2).body
