"""How a process waits for a Redis that is away, and how a stop ends that wait."""

from __future__ import annotations

import time

import pytest
import redis

from webtrawl.errors import RedisUnavailable
from webtrawl.frontier.retry import Outage, open_waiting


def test_a_stop_during_a_wait_for_redis_ends_it_at_the_next_look(monkeypatch: pytest.MonkeyPatch) -> None:
    """Long into an outage a process waits 1-2 s between tries. A stop that came during the wait was seen after it,
    and a fetcher draining at the node's stop could outlast the node's wait for it (then killed: "fetchers did
    not finish"). Now a wait looks at the stop every 0.1 s."""
    stopping: list[bool] = []
    outage = Outage("fetcher 0", stop=lambda: bool(stopping))
    refused = redis.ConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")
    for _ in range(8):
        outage.failed(refused)  # the outage's eighth failure: the next waits are the longest
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        stopping.append(True)  # the node is told to stop during this sleep

    def opener() -> None:
        raise refused

    monkeypatch.setattr(time, "sleep", sleep)
    with pytest.raises(RedisUnavailable, match="Connection refused"):
        open_waiting(opener, outage)
    assert len(slept) == 1 and slept[0] <= 0.1
