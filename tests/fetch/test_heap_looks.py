"""The fetcher looks at its heap after each _LOOK_BYTES of bodies read, or after the backstop time."""

from __future__ import annotations

from webtrawl.fetch.worker import _LOOK_BYTES, _TRIM_BACKSTOP_S, HeapLooks


def test_a_look_comes_after_enough_bodies_and_counts_from_there() -> None:
    looks = HeapLooks(read=1000, now=0.0)
    assert not looks.due(1000 + _LOOK_BYTES - 1, 1.0)
    assert looks.due(1000 + _LOOK_BYTES, 1.5)
    assert not looks.due(1000 + _LOOK_BYTES + 10, 2.0)  # counted from the look
    assert looks.due(1000 + 2 * _LOOK_BYTES, 2.5)


def test_a_look_comes_after_the_backstop_without_bodies() -> None:
    looks = HeapLooks(read=0, now=100.0)
    assert not looks.due(0, 100.0 + _TRIM_BACKSTOP_S - 0.1)
    assert looks.due(0, 100.0 + _TRIM_BACKSTOP_S)
    assert not looks.due(5, 100.0 + _TRIM_BACKSTOP_S + 1.0)
