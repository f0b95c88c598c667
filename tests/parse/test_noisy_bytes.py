"""A page whose bytes change on every fetch (a timestamp, a CSRF token, an ad) but whose main text and items do not is
no change for its recrawl interval either: with --changes or --chunks it waits longer each round, as a 304 does,
instead of being fetched at D/4 for ever. A real edit still halves it. The parser's real batch step with real text
extraction, real Redis for the content states, and an in-memory frontier that keeps the completions."""

from __future__ import annotations

import uuid

import msgspec
import pytest
import redis

from tests.extract.helpers import extract_ctx
from tests.fixtures.memory_frontier import MemoryFrontier
from tests.parse.helpers import RecordingSink, make_page
from webtrawl.config import DiscoveryOptions
from webtrawl.formats.recrawl import decode
from webtrawl.parse.batch import PageBatches
from webtrawl.parse.tracking import ContentTracker
from webtrawl.store import FanOut

FILL = "Every paragraph here is long enough for the main-text extractor to take it as the article's own text. " * 3


def _html(n: int, story: str) -> bytes:
    return (
        f"<html><head><title>Story</title><meta name=csrf content=token{n}></head><body><article><h1>Story</h1>"
        f"<p>{story} {FILL}</p><p>{FILL}</p></article><footer>Served at 10:0{n}</footer></body></html>"
    ).encode()


@pytest.mark.parametrize(("chunks", "changes"), [(0, True), (200, False)])  # --changes, or --chunks alone
def test_noisy_bytes_are_no_change_for_the_interval(redis_client: redis.Redis, chunks: int, changes: bool) -> None:
    ctx = extract_ctx(text=True, markdown=True)
    ctx.recrawl_after = 100.0
    prefix = f"t{uuid.uuid4().hex[:12]}"
    tracker = ContentTracker(
        redis_client, prefix, chunk_size=chunks, changes=changes, keep_state=True, announce_new=True
    )
    frontier, sink = MemoryFrontier(), RecordingSink([])
    outputs = FanOut([sink], streams={"records", "chunks", "changes"})
    batches = PageBatches(DiscoveryOptions(recrawl_after=100.0), ctx, frontier, outputs, tracker=tracker)

    def fetch(n: int, story: str) -> int:
        page = make_page(_html(n, story), url="http://news.example/story")
        page = msgspec.structs.replace(page, lease=msgspec.structs.replace(page.lease, token=f"n/f0.{n}"))
        page.recrawl = frontier.completed[-1].recrawl if frontier.completed else ""
        batches.process([page])
        state = decode(frontier.completed[-1].recrawl)
        assert state is not None
        return state.interval_ms

    assert fetch(1, "The story as first told.") == 100_000
    intervals = [fetch(n, "The story as first told.") for n in range(2, 6)]  # new bytes every time, the same story
    assert intervals == [200_000, 400_000, 800_000, 800_000]  # doubled up to 8 D, as for 304s
    assert not any(out.changes or out.chunks for out in sink.outputs[1:])
    assert fetch(6, "The story, corrected.") == 400_000  # an edit: halved
    assert bool(sink.outputs[-1].changes) == changes and bool(sink.outputs[-1].chunks) == bool(chunks)
