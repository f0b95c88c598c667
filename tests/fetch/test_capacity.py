"""A fetcher's requests in flight: --concurrency, raised toward --max-concurrency while the CPUs have idle time and
every slot is in use, lowered back when they have none; the CPU reading itself (machine and container quota)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.fetch.visits_setup import Setup
from webtrawl.config import FetchOptions
from webtrawl.fetch import capacity
from webtrawl.fetch.base import Fetchers, FetchRequest
from webtrawl.fetch.capacity import Capacity, CpuIdle, ceiling
from webtrawl.fetch.response import Response
from webtrawl.fetch.testing import FakeFetcher, FakeWeb, answer
from webtrawl.fetch.worker import _Fetcher
from webtrawl.messages import Lease
from webtrawl.politeness import RobotsRules


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _ticks(cap: Capacity, clock: _Clock, idle: list[float], *, full: bool) -> list[int]:
    """The slots after each tick of ``idle`` readings, the lease loop finding them all in use or not."""
    seen = []
    for _ in idle:
        if full:
            cap.full()
        clock.now += capacity.TICK_S
        seen.append(cap.current())
    return seen


def test_the_slots_grow_by_steps_to_the_ceiling_while_the_cpus_are_idle_and_every_slot_is_in_use() -> None:
    clock, idle = _Clock(), [0.5] * 12
    cap = Capacity(128, 256, iter(idle).__next__, clock)
    assert cap.current() == 128
    assert _ticks(cap, clock, idle, full=True) == [144, 160, 176, 192, 208, 224, 240, 256, 256, 256, 256, 256]


def test_the_slots_do_not_grow_while_some_are_free_or_the_cpus_have_no_room() -> None:
    clock = _Clock()
    cap = Capacity(128, 256, iter([0.5, 0.5, 0.1, 0.1]).__next__, clock)
    assert _ticks(cap, clock, [0.5, 0.5], full=False) == [128, 128]  # nothing more to fetch: no more slots
    assert _ticks(cap, clock, [0.1, 0.1], full=True) == [128, 128]  # 10% idle: between the marks, kept


def test_the_slots_shrink_back_to_concurrency_when_the_cpus_are_busy() -> None:
    clock, readings = _Clock(), [0.5] * 3 + [0.02] * 5
    cap = Capacity(128, 256, iter(readings).__next__, clock)
    assert _ticks(cap, clock, readings, full=True) == [144, 160, 176, 160, 144, 128, 128, 128]


def test_max_concurrency_at_or_under_concurrency_keeps_it_fixed_and_reads_no_cpu() -> None:
    assert ceiling(FetchOptions(concurrency=128)) == 256  # 0: twice
    assert ceiling(FetchOptions(concurrency=128, max_concurrency=100)) == 128
    assert ceiling(FetchOptions(concurrency=4, max_concurrency=10)) == 10
    cap = Capacity(128, 100)
    assert (cap.top, cap._idle, cap.current()) == (128, None, 128)


def _stat(idle: int, busy: int) -> str:
    """/proc/stat's first line: user nice system idle iowait irq softirq steal guest guest_nice."""
    return f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"


def test_cpu_idle_reads_the_machine_and_a_containers_quota_whichever_leaves_less(tmp_path: Path) -> None:
    stat, clock = tmp_path / "stat", _Clock()
    stat.write_text(_stat(idle=1000, busy=1000))
    (tmp_path / "cpu.stat").write_text("usage_usec 5000000\nuser_usec 1\n")
    reading = CpuIdle(root=tmp_path, stat=stat, clock=clock)
    stat.write_text(_stat(idle=1600, busy=1400))  # the machine: 60% idle since
    clock.now = 1.0
    (tmp_path / "cpu.stat").write_text("usage_usec 5900000\n")  # 0.9 CPU-second in 1 s
    assert reading() == pytest.approx(0.6)  # no quota file: the machine's
    (tmp_path / "cpu.max").write_text("100000 100000\n")  # one CPU: 90% of it used
    stat.write_text(_stat(idle=2200, busy=1800))
    clock.now = 2.0
    (tmp_path / "cpu.stat").write_text("usage_usec 6800000\n")
    assert reading() == pytest.approx(0.1)
    (tmp_path / "cpu.max").write_text("max 100000\n")  # no quota
    assert CpuIdle(root=tmp_path, stat=tmp_path / "gone")() is None


class _Held(FakeFetcher):
    """Each page's request waits until the test lets them all go; counts the most in flight at once."""

    def __init__(self, web: FakeWeb) -> None:
        super().__init__(web)
        self.in_flight = self.most = 0
        self.go = asyncio.Event()

    async def fetch(self, request: FetchRequest, rules: RobotsRules) -> Response:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await self.go.wait()
            return await super().fetch(request, rules)
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize(("idle", "most"), [(0.5, 4), (0.0, 2)])
def test_the_lease_loop_keeps_more_requests_in_flight_only_while_the_cpus_have_room(
    monkeypatch: pytest.MonkeyPatch, idle: float, most: int
) -> None:
    readings: list[float] = []

    def reading() -> float:
        readings.append(idle)
        return idle

    monkeypatch.setattr(capacity, "TICK_S", 0.0)
    monkeypatch.setattr(capacity, "CpuIdle", lambda: reading)
    hosts = [f"h{i}.test" for i in range(8)]
    answers: dict[str, Any] = {f"http://{h}/p": answer(200) for h in hosts}
    answers.update({f"http://{h}/robots.txt": answer(404) for h in hosts})
    setup = Setup(answers, budget=20, concurrency=2, max_concurrency=4)
    setup.plain = held = _Held(setup.web)
    setup.frontier.queue = [Lease(f"n/f0.{i}", 0, h, f"http://{h}/p") for i, h in enumerate(hosts)]

    def done() -> bool:
        if held.most < most and len(readings) < 10:
            return False
        held.go.set()  # at the mark (or 10 ticks with every slot in use): let them all end
        return True

    asyncio.run(setup.serve(done))
    assert held.most == most


class _RendersQueued(FakeFetcher):
    waiting = 1  # a page waits for the browser: the lease loop takes no lease meanwhile


def test_renders_queued_do_not_grow_the_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    """Slots wait for a renderer then, not for the network: more of them would only lease pages that wait too."""
    readings: list[float] = []

    def reading() -> float:
        readings.append(0.5)
        return 0.5

    monkeypatch.setattr(capacity, "TICK_S", 0.0)
    monkeypatch.setattr(capacity, "CpuIdle", lambda: reading)
    setup = Setup({}, budget=20, concurrency=2, max_concurrency=4)
    fetcher = _Fetcher(setup.args)

    async def body() -> None:
        fetchers = Fetchers(_RendersQueued(setup.web))
        serving = asyncio.create_task(fetcher.serve(setup.frontier, setup.visits(), fetchers, setup.web))
        async with asyncio.timeout(10):
            while len(readings) < 4:
                await asyncio.sleep(0.01)
        setup.args.stop.set()
        await serving

    asyncio.run(body())
    assert fetcher.capacity.value == 2
