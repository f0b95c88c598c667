"""Many lease processes (fetchers on many nodes) spread over the shards instead of all asking the same ones."""

from __future__ import annotations

from webtrawl.frontier.planner import IDLE_ASKS_PER_S, LeasePlanner


def _sweep(p: LeasePlanner, shards: int) -> list[int]:
    """The order in which an idle planner asks its shards, one call after the other."""
    order: list[int] = []
    now = 0.0
    while len(order) < shards:
        plan = p.pick(8, now, exclude=set(order))
        assert plan, order
        for shard, asked in plan:
            order.append(shard)
            p.observe(shard, asked, 0, server_now=0, earliest=-1, now=now)
    return order


def test_processes_start_their_sweep_at_different_shards_and_each_covers_all() -> None:
    first, second = LeasePlanner(64, 8, 0.5, start=0), LeasePlanner(64, 8, 0.5, start=32)
    a, b = _sweep(first, 64), _sweep(second, 64)
    assert sorted(a) == sorted(b) == list(range(64))
    assert set(a[:8]).isdisjoint(b[:8])  # the first round trips of the two go to different shards
    assert a[:8] == list(range(8)) and b[:8] == list(range(32, 40))


def test_an_idle_process_asks_a_bounded_number_of_empty_shards_per_second() -> None:
    shards = 4096
    p = LeasePlanner(shards, 8, 0.5)
    _sweep(p, shards)
    assert p.next_due(0.0) >= shards / IDLE_ASKS_PER_S  # 4 s: 1000 empty asks/s at most, not 8192
    small = LeasePlanner(64, 8, 0.5)
    _sweep(small, 64)
    assert small.next_due(0.0) == 0.5  # few shards: the configured poll interval is kept
    never = LeasePlanner(shards, 8, 0.0)
    _sweep(never, shards)
    assert never.next_due(0.0) == 0.0  # 0 turns resting off (tests)
