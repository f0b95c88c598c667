"""One fetcher's visits over fakes of the frontier and the fetcher (tests/fetch/test_visits.py, test_lease_loop.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fetch.servers import local_cfg
from tests.fixtures.fake_frontier import FakeFrontier
from webtrawl.config import CrawlConfig
from webtrawl.fetch.base import Fetchers
from webtrawl.fetch.batcher import ReleaseBatcher
from webtrawl.fetch.robots import RobotsCache
from webtrawl.fetch.route import RenderRoute
from webtrawl.fetch.stats import FetcherStats
from webtrawl.fetch.testing import Answer, FakeFetcher, FakeWeb, PageCollector
from webtrawl.fetch.visit import Visits
from webtrawl.fetch.visitdeps import VisitDeps
from webtrawl.fetch.worker import _Fetcher
from webtrawl.frontier import FrontierSettings
from webtrawl.messages import Lease
from webtrawl.node.children import CONTEXT
from webtrawl.node.startup import fetcher_args

ROBOTS = "http://a.test/robots.txt"
PAGE = "http://a.test/p"
DELAY_MS = 2000


class Setup:
    """One fetcher's visits over fakes, with a budget of 10 pages."""

    def __init__(
        self, answers: dict[str, Answer | list[Answer]], budget: int = 10, stats: FetcherStats | None = None, **cfg: Any
    ) -> None:
        self.cfg: CrawlConfig = local_cfg(**{"delay": DELAY_MS / 1000, "max_retries": 1, **cfg})
        self.web = FakeWeb(answers)
        self.frontier = FakeFrontier()
        self.plain = FakeFetcher(self.web)
        self.render = FakeFetcher(self.web, role="render", name="browser") if self.cfg.rendering.enabled() else None
        self.pages = PageCollector()
        place = {"redis_url": "", "parser_sockets": [Path("/nonexistent")], "stop": CONTEXT.Event()}
        if stats is not None:  # the node's view of this fetcher (its --max-pages stop reads it)
            place["stats"] = stats.array
        settings = FrontierSettings.from_config(self.cfg)
        self.args = fetcher_args(self.cfg, settings, 0, budget=CONTEXT.Value("q", budget), **place)

    def visits(self) -> Visits:
        robots = RobotsCache(self.frontier, self.web, self.cfg.fetch, self.cfg.politeness, self.cfg.limits)
        deps = VisitDeps(
            self.frontier,
            ReleaseBatcher(self.frontier.release, wait_s=0),
            robots,
            Fetchers(self.plain, self.render),
            RenderRoute(self.cfg.rendering, self.cfg.limits),
            self.pages,
            self.web,
        )
        return Visits(self.args, deps)

    async def visit(self, *leases: Lease) -> None:
        visits = self.visits()
        for lease in leases:
            await visits.handle(lease)

    async def serve(self, done: Callable[[], bool]) -> None:
        """The fetcher's lease loop over the fake frontier until ``done()``, then a stop."""
        fetcher = _Fetcher(self.args)
        loop = asyncio.create_task(fetcher.serve(self.frontier, self.visits(), Fetchers(self.plain), self.web))
        async with asyncio.timeout(10):
            while not done():
                await asyncio.sleep(0.01)
        self.args.stop.set()
        await loop

    def run(self, *leases: Lease) -> None:
        asyncio.run(self.visit(*leases))

    @property
    def budget(self) -> int:
        assert self.args.budget is not None
        return int(self.args.budget.value)


def lease(url: str = PAGE, retries: int = 0, n: int = 1) -> Lease:
    return Lease(token=f"n/f0.{n}", shard=0, host="a.test", url=url, retries=retries)
