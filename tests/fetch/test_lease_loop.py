"""The fetcher's lease loop over fakes: the --max-pages budget it takes and gives back, and its stop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tests.fetch.visits_setup import PAGE, ROBOTS, Setup, lease
from tests.fixtures.fake_frontier import FakeFrontier
from webtrawl.fetch import worker
from webtrawl.fetch.base import Fetchers
from webtrawl.fetch.stats import FetcherStats
from webtrawl.fetch.testing import Answer, FakeFetcher, FakeWeb, answer
from webtrawl.fetch.visit import Visits
from webtrawl.fetch.worker import _Fetcher
from webtrawl.frontier import Held, Parked, Release, UrlAction
from webtrawl.messages import Lease
from webtrawl.node.stopping import PageBudget


def test_the_lease_loop_fetches_no_more_pages_than_the_budget_and_leaves_the_rest_queued() -> None:
    urls = [f"http://h{i}.test/p" for i in range(5)]
    answers: dict[str, Answer | list[Answer]] = {u: answer(200) for u in urls}
    answers.update({f"http://h{i}.test/robots.txt": answer(404) for i in range(5)})
    setup = Setup(answers, budget=3)
    setup.frontier.queue = [Lease(f"n/f0.{i}", 0, f"h{i}.test", url) for i, url in enumerate(urls)]
    asyncio.run(setup.serve(lambda: len(setup.pages.pages) == 3 and not setup.frontier.leased))
    assert sorted(p.lease.url for p in setup.pages.pages) == sorted(lease.url for lease in setup.frontier.kept)
    assert sum(setup.web.requested(url) for url in urls) == 3 and setup.budget == 0
    assert len(setup.frontier.queue) == 2  # not leased: no budget left for them


class _LeasingWhileATaskEnds(FakeFrontier):
    """Its second lease call is out while the first URL's task ends; meanwhile it asks what the node would."""

    def __init__(self, ask: Callable[[], bool], first: Lease) -> None:
        super().__init__()
        self.queue, self.ask, self.calls, self.answers = [first], ask, 0, list[bool]()

    async def lease(self, owner: str, max_hosts: int) -> list[Lease]:
        self.calls += 1
        if self.calls == 2:
            while self.kept == [] or any(_visiting(task) for task in asyncio.all_tasks()):  # until its task ended
                await asyncio.sleep(0.001)
            await asyncio.sleep(0)  # the task's done-callbacks (the fetcher's report), queued when it ended, run
            self.answers.append(self.ask())
        return await super().lease(owner, max_hosts)


def _visiting(task: asyncio.Task[Any]) -> bool:
    return getattr(task.get_coro(), "__qualname__", "") == Visits.handle.__qualname__


def test_a_task_ending_while_the_lease_loop_asks_for_more_does_not_look_like_the_budget_spent() -> None:
    """The lease loop pays for the leases it asks for before the call and says so (the node must not see the budget
    gone with nothing in flight). A task ending during the call reported only the tasks left, none: the node saw no
    budget and no lease and stopped at 1 page of --max-pages 3 (a spider port's test, loaded CI machine)."""
    stats = FetcherStats(1)
    setup = Setup({ROBOTS: answer(404), PAGE: answer(200)}, budget=1, stats=stats)
    setup.run(lease(n=1))  # robots.txt known: its budget back (2); the lease loop below pays for the page itself
    assert setup.budget == 2
    node = PageBudget(2, stats, setup.args.budget)
    frontier = _LeasingWhileATaskEnds(node.spent, lease(n=2))
    frontier.robots, setup.frontier = setup.frontier.robots, frontier
    asyncio.run(setup.serve(lambda: bool(frontier.answers)))
    assert [p.lease.url for p in setup.pages.pages] == [PAGE]
    assert frontier.answers == [False]  # 1 page of 2 ended, the other paid for and being asked for


class _FailingLease(FakeFrontier):
    async def lease(self, owner: str, max_hosts: int) -> list[Lease]:
        raise RuntimeError("ERR a script that failed")


def test_a_lease_call_that_fails_gives_back_the_budget_it_took_and_asks_for_nothing_more() -> None:
    """A fetcher pays for the leases it asks for before the call: a call that failed (the fetcher's life ends, its
    restart goes on) kept them paid and reported as coming, and --max-pages stopped short of its pages."""
    stats = FetcherStats(1)
    setup = Setup({}, budget=5, stats=stats)
    setup.frontier = _FailingLease()
    fetcher = _Fetcher(setup.args)
    with pytest.raises(RuntimeError, match="a script that failed"):
        asyncio.run(fetcher.serve(setup.frontier, setup.visits(), Fetchers(setup.plain), setup.web))
    assert setup.budget == 5 and stats.leases() == 0


class _Hanging(FakeWeb):
    """The page's request never ends (a slow server at the stop)."""

    async def fetch(self, url: str, **kw: Any) -> Answer:
        if url != PAGE:
            return await super().fetch(url, **kw)
        self.requests.append((url, {}))
        await asyncio.Future()
        raise AssertionError("never answered")


class _RefusingGiveBacks(FakeFrontier):
    """Refuses to take a URL back with an error that is not an outage (a bug, a script refusing)."""

    def __init__(self, queue: list[Lease]) -> None:
        super().__init__()
        self.queue, self.refused = queue, 0

    async def release(self, releases: Sequence[Release]) -> list[Held | Parked | None]:
        if any(release.action == UrlAction.HEAD for release in releases):
            self.refused += 1
            raise RuntimeError("ERR refused")
        return await super().release(releases)


def test_a_give_back_refused_at_the_stop_is_not_retried_past_the_stops_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    """A request abandoned at the stop gives its URL back; if that fails, retrying (0.5 + 1 + 2 s) outlasted the
    node's wait for its fetchers, which then killed them ("fetchers did not finish"). The lease stays: taken back
    when the node starts again, never lost."""
    monkeypatch.setattr(worker, "STOP_GRACE_S", 0.0)  # abandon the request at once
    setup = Setup({ROBOTS: answer(404)})
    setup.run(lease(n=1))  # robots.txt known (its page fails to connect: no canned answer)
    frontier = _RefusingGiveBacks([lease(n=2)])
    frontier.robots, setup.frontier = setup.frontier.robots, frontier
    setup.web = _Hanging({ROBOTS: answer(404)})
    setup.plain = FakeFetcher(setup.web)
    asyncio.run(setup.serve(lambda: setup.web.requested(PAGE) == 1))
    assert frontier.refused == 1 and list(frontier.leased) == [lease(n=2).token]
    assert setup.pages.pages == []
