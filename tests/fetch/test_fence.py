"""Self-fencing's rules (fetch/fence.py): which --lease-ttl a node accepts, and when a request may start."""

from __future__ import annotations

import time

import pytest

from webtrawl.config import load
from webtrawl.errors import InputError
from webtrawl.fetch.fence import ABANDON_S, Fence, check_lease_ttl, request_bound
from webtrawl.frontier.retry import Outage


def test_a_lease_ttl_a_request_could_outlive_is_refused_at_start() -> None:
    check_lease_ttl(load({"lease_ttl": "3", "total": "2", "robots": "2"}, env={}))
    with pytest.raises(InputError, match="--lease-ttl 5 is too short: a request may take 20s"):
        check_lease_ttl(load({"lease_ttl": "5", "total": "2"}, env={}))  # --robots 20 by default
    rendering = load({"lease_ttl": "40", "render": "auto", "total": "10", "render_timeout": "30"}, env={})
    assert request_bound(rendering.fetch, rendering.rendering) == 40  # the plain try and the render: one visit
    with pytest.raises(InputError):
        check_lease_ttl(rendering)


def test_a_request_starts_only_with_enough_lease_left_and_not_while_redis_is_away() -> None:
    outage = Outage("test")
    fence = Fence(lease_ttl_s=3.0, need_s=2.0 + ABANDON_S, outage=outage)
    now = time.monotonic()
    fence.leased(["fresh"], now)
    fence.leased(["old"], now - 1.0)  # granted a second ago: 2 s left, the request may take 2.2
    fence.leased(["held"], now - 1.0, wait_s=5.0)  # a held host's next lease: due later, its TTL from then
    assert (fence.why_not("fresh"), fence.why_not("held"), fence.why_not("unknown")) == ("", "", "")
    assert fence.why_not("old") == "its lease could expire before the request ends"
    fence.released("old")
    assert fence.why_not("old") == ""
    outage.failed(ConnectionError("gone"))
    assert fence.why_not("fresh") == "Redis is away"
    outage.answered(time.monotonic())  # a call made during the outage was answered
    outage.ok()
    assert fence.why_not("fresh") == ""
    assert Fence().why_not("anything") == ""  # the default (fakes in unit tests) never fences
