"""A spider's start_requests() runs once per crawl, on real Redis: one node of several runs it, the others wait for
its seeds; a node killed while running it is taken over (by itself at once, by another once its claim expires);
one that fails gives its claim up. It ran again on every resume and on every node of a cluster."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest
import redis

from webtrawl.messages import NewUrl
from webtrawl.node.startreqs import DONE, SpiderStart, start_key

SEEDS = [NewUrl("http://shop.test/c/0/1", depth=0, route="parse_listing")]


class _Requests:
    """start_requests() as the supervisor calls it, counting its runs (its side effects)."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> list[NewUrl]:
        self.runs += 1
        return SEEDS


def _never() -> bool:
    return False


def _queue(start: SpiderStart, client: redis.Redis, prefix: str, node: str, stopped: Callable[[], bool]) -> list[str]:
    with start.once(client, prefix, node, stopped) as seeds:
        return [s.url for s in seeds]


def test_start_requests_run_once_per_crawl_not_on_each_resume(redis_client: redis.Redis) -> None:
    prefix, requests = f"t{uuid.uuid4().hex[:12]}", _Requests()
    assert _queue(SpiderStart(requests), redis_client, prefix, "n1", _never) == ["http://shop.test/c/0/1"]
    assert _queue(SpiderStart(requests), redis_client, prefix, "n1", _never) == []  # a resume
    assert _queue(SpiderStart(requests), redis_client, prefix, "n2", _never) == []  # another node
    assert requests.runs == 1 and redis_client.get(start_key(prefix)) == DONE.encode()


def test_a_node_waits_for_the_seeds_of_the_node_running_start_requests(redis_client: redis.Redis) -> None:
    prefix, requests = f"t{uuid.uuid4().hex[:12]}", _Requests()
    first = SpiderStart(requests)
    with first.once(redis_client, prefix, "n1", _never) as seeds:
        assert seeds == SEEDS

        polls: list[bool] = []

        def n2_stopped() -> bool:  # asked before each of n2's looks at the claim
            polls.append(True)
            if len(polls) == 2:  # n2 found n1's claim and waited once: n1 has queued its seeds
                redis_client.set(start_key(prefix), DONE)  # what the end of n1's block does
            return False

        assert _queue(SpiderStart(requests), redis_client, prefix, "n2", n2_stopped) == []
    assert requests.runs == 1 and len(polls) == 2


@pytest.mark.parametrize("node", ["n1", "n2"])
def test_a_claim_a_killed_node_left_is_taken_over_and_no_seed_lost(redis_client: redis.Redis, node: str) -> None:
    """kill -9 between queuing the seeds and 'done': the claim stays (until it expires). The same node, restarted,
    takes it over at once; another one once it expired. start_requests() runs again (its seeds, already queued,
    are dropped as seen by the frontier): no seed is lost."""
    prefix, requests = f"t{uuid.uuid4().hex[:12]}", _Requests()
    redis_client.set(start_key(prefix), "n1", px=60_000)  # n1 was killed while queuing its seeds

    def expires() -> bool:  # asked while n2 waits for n1's claim: it expires
        redis_client.delete(start_key(prefix))
        return False

    assert _queue(SpiderStart(requests), redis_client, prefix, node, expires) == ["http://shop.test/c/0/1"]
    assert requests.runs == 1 and redis_client.get(start_key(prefix)) == DONE.encode()


def test_a_stop_while_waiting_for_another_node_queues_nothing(redis_client: redis.Redis) -> None:
    prefix, requests = f"t{uuid.uuid4().hex[:12]}", _Requests()
    redis_client.set(start_key(prefix), "n1", px=60_000)
    assert _queue(SpiderStart(requests), redis_client, prefix, "n2", lambda: True) == []
    assert requests.runs == 0 and redis_client.get(start_key(prefix)) == b"n1"


def test_start_requests_that_fail_give_the_claim_up(redis_client: redis.Redis) -> None:
    prefix = f"t{uuid.uuid4().hex[:12]}"

    def fails() -> list[NewUrl]:
        raise RuntimeError("database away")

    with pytest.raises(RuntimeError, match="database away"):
        _queue(SpiderStart(fails), redis_client, prefix, "n1", _never)
    assert redis_client.get(start_key(prefix)) is None  # the next node to start runs it, without waiting
    with (
        pytest.raises(ValueError, match="bad seed line"),
        SpiderStart(_Requests()).once(redis_client, prefix, "n1", _never),
    ):
        raise ValueError("bad seed line")  # queuing the seeds failed (a --seeds file's bad line)
    assert redis_client.get(start_key(prefix)) is None
