"""The parser's batch step without Redis or sockets (an in-memory frontier and sink): every output is written and
flushed before the batch's links are added and its URLs completed; links the frontier refuses are recorded as
dropped before completion; a page the parser fails on is recorded and completed, not lost."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import pytest

from tests.fixtures.memory_frontier import MemoryFrontier
from tests.parse.helpers import RecordingSink, make_ctx, make_page
from webtrawl.config import DiscoveryOptions
from webtrawl.formats.recrawl import RecrawlState
from webtrawl.frontier.base import Frontier
from webtrawl.messages import Page
from webtrawl.parse import batch as batch_module
from webtrawl.parse.batch import PageBatches
from webtrawl.store import Drop, FanOut


def _page(path: str, links: Sequence[str], token: int) -> Page:
    html = "".join(f'<a href="{link}">x</a>' for link in links).encode()
    page = make_page(b"<title>t</title>" + html, url=f"http://site.example/{path}")
    return msgspec.structs.replace(page, lease=msgspec.structs.replace(page.lease, token=f"n/f0.{token}"))


def _setup(host_queue_cap: int = 1_000) -> tuple[PageBatches, MemoryFrontier, RecordingSink]:
    log: list[str] = []
    frontier = MemoryFrontier(host_queue_cap, log)
    sink = RecordingSink(log)
    _: Frontier = frontier  # it is a Frontier
    return PageBatches(DiscoveryOptions(), make_ctx(), frontier, FanOut([sink], streams={"records"})), frontier, sink


def test_outputs_are_durable_before_links_are_added_and_urls_completed() -> None:
    batches, frontier, sink = _setup()
    batches.process([_page("a", ["/b", "/c"], 1), _page("b", ["/c", "/d"], 2)])
    assert frontier.log == ["write 2", "flush", "add 4", "complete 2"]
    assert [out.record.url for out in sink.outputs] == ["http://site.example/a", "http://site.example/b"]
    assert frontier.seen == {f"http://site.example/{p}" for p in "bcd"}
    assert [c.token for c in frontier.completed] == ["n/f0.1", "n/f0.2"]
    assert all(c.counters["stored"] == 1 for c in frontier.completed)


def test_links_the_frontier_refuses_are_recorded_as_dropped_before_completion() -> None:
    batches, frontier, sink = _setup(host_queue_cap=1)
    batches.process([_page("a", ["/b", "/c"], 1)])
    assert frontier.log == ["write 1", "flush", "add 2", "write_drops 1", "flush", "complete 1"]
    assert sink.drops == [Drop("http://site.example/c", "host-queue-cap", "http://site.example/a", 1)]


def test_a_page_the_parser_fails_on_is_recorded_and_completed(monkeypatch: pytest.MonkeyPatch) -> None:
    real = batch_module.process_page

    def buggy(page: Page, ctx: object) -> object:
        if page.lease.url.endswith("/bad"):
            raise RuntimeError("a parser bug")
        return real(page, ctx)  # type: ignore[arg-type]

    monkeypatch.setattr(batch_module, "process_page", buggy)
    batches, frontier, sink = _setup()
    batches.process([_page("bad", ["/x"], 1), _page("good", ["/y"], 2)])
    assert {out.record.url: out.record.error for out in sink.outputs} == {
        "http://site.example/bad": "parse-bug",
        "http://site.example/good": None,
    }
    assert sorted(c.token for c in frontier.completed) == ["n/f0.1", "n/f0.2"]
    assert frontier.seen == {"http://site.example/y"}


def test_a_page_of_the_recrawl_set_the_parser_fails_on_stays_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    def buggy(page: Page, ctx: object) -> object:
        raise RuntimeError("a parser bug")

    first = _page("a", [], 1)
    state = RecrawlState("site.example", 0, "http://site.example", "/a", 100_000, etag='"v1"').encode()
    monkeypatch.setattr(batch_module, "process_page", buggy)
    log: list[str] = []
    frontier = MemoryFrontier(1_000, log)
    batches = PageBatches(
        DiscoveryOptions(recrawl_after=100.0), make_ctx(), frontier, FanOut([RecordingSink(log)], streams={"records"})
    )
    first.recrawl = state
    batches.process([first])
    (done,) = frontier.completed
    assert (done.url, done.recrawl) == ("http://site.example/a", state) and done.due_ms > 0  # watched next round too
