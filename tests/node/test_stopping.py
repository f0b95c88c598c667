"""--max-pages' stop condition read against a fetcher taking and giving back budget in another thread of control."""

from __future__ import annotations

import multiprocessing
import threading

from webtrawl.fetch import stats as fetcher_stats
from webtrawl.fetch.stats import FetcherStats
from webtrawl.node.stopping import PageBudget


class _FetcherActsMidRead(FetcherStats):
    """Stats whose read of the leases lets a fetcher finish a lease round first: one that found nothing ready gives
    its taken budget back and announces no lease, as fetch/worker.py does. It runs in a thread; the read waits for
    it for a while and goes on if it is held up (it is when the budget's lock is held)."""

    def __init__(self, budget: PageBudget) -> None:
        super().__init__(1)
        self.budget = budget
        self.fetcher: threading.Thread | None = None

    def _round_ends(self) -> None:
        assert self.budget.shared is not None
        with self.budget.shared.get_lock():
            self.budget.shared.value += 2
        self.array[fetcher_stats.LEASES] = 0

    def leases(self) -> int:
        if self.fetcher is None:
            self.fetcher = threading.Thread(target=self._round_ends)
            self.fetcher.start()
            self.fetcher.join(timeout=2.0)
        return super().leases()


def test_max_pages_is_not_reached_while_a_fetcher_gives_its_budget_back() -> None:
    """A node stopped at 1 page of --max-pages 3 (CI, load 13-15): the supervisor read the budget while a fetcher
    held all of it for a lease call, and the leases after the call found nothing ready, gave the budget back and
    announced none: a pair that never was. With 2 pages of budget left and nothing in flight, the crawl goes on."""
    budget = PageBudget(max_pages=3, stats=FetcherStats(1), shared=multiprocessing.Value("q", 0))
    stats = _FetcherActsMidRead(budget)
    budget.stats = stats
    stats.array[fetcher_stats.ENDED] = 1  # one page done; the fetcher announced 2 leases and took the 2 pages left
    stats.array[fetcher_stats.LEASES] = 2
    spent = budget.spent()
    assert stats.fetcher is not None
    stats.fetcher.join()
    assert not spent
    assert not budget.spent() and budget.shared is not None and budget.shared.value == 2


def test_max_pages_is_reached_with_the_budget_gone_and_nothing_in_flight() -> None:
    budget = PageBudget(max_pages=3, stats=FetcherStats(1), shared=multiprocessing.Value("q", 0))
    budget.stats.array[fetcher_stats.ENDED] = 2
    assert budget.spent()  # the third page's fetcher was killed: its reservation never comes back
    budget.stats.array[fetcher_stats.LEASES] = 1
    assert not budget.spent()
    budget.stats.array[fetcher_stats.ENDED] = 3
    assert budget.spent()
