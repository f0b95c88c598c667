"""What a fetch result tells the frontier: gap, host failure, Retry-After, retry."""

from __future__ import annotations

import email.utils
import random

import pytest

from webtrawl.config import Politeness
from webtrawl.politeness import HostOutcome, jittered, outcome_for, parse_retry_after

NOW = 1_700_000_000.0
POL = Politeness(delay=1.0, max_crawl_delay=30.0, backoff_max=600.0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 0 ", 0.0),
        ("1.5", 1.5),
        (email.utils.formatdate(NOW + 90, usegmt=True), 90.0),
        (email.utils.formatdate(NOW - 90, usegmt=True), 0.0),  # in the past: no wait, never negative
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),
        ("-5", None),
        ("soon", None),
        ("", None),
        ("1 Oct 25555555555555555555555 07:00:00 GMT", None),  # a year past a C long: it raised OverflowError
        ("1 Oct 99999 07:00:00 GMT", None),
    ],
)
def test_parse_retry_after(value: str, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


@pytest.mark.parametrize(
    ("status", "reason", "failed", "retry"),
    [
        (200, None, False, False),
        (301, None, False, False),
        (304, None, False, False),
        (404, None, False, False),
        (403, None, False, False),
        (408, None, False, True),
        (429, None, True, True),
        (500, None, True, True),
        (502, None, True, True),
        (503, None, True, True),
        (504, None, True, True),
        (501, None, True, False),
        (505, None, True, False),
        (None, "timeout", True, True),
        (None, "connect", True, True),
        (None, "reset", True, True),
        (None, "bad-http", True, True),
        (None, "dns", True, False),
        (None, "tls", True, False),
        (None, "too-large", False, False),
        (None, "bad-content", False, False),
    ],
)
def test_outcome_table(status: int | None, reason: str | None, failed: bool, retry: bool) -> None:
    outcome = outcome_for(status, reason, [], POL, None, now=NOW)
    assert (outcome.failed, outcome.retry) == (failed, retry)
    assert outcome.delay_ms == 1000
    assert outcome.retry_after_ms == 0


@pytest.mark.parametrize("reason", ["ip-policy", "port-policy", "scheme"])
def test_policy_refusals_sent_no_request_so_need_no_gap(reason: str) -> None:
    assert outcome_for(None, reason, [], POL, None) == HostOutcome(delay_ms=0)


@pytest.mark.parametrize(
    ("crawl_delay", "delay_ms"),
    [(None, 1000), (0.2, 1000), (5.0, 5000), (120.0, 30000)],  # never below delay, capped at max_crawl_delay
)
def test_delay_is_the_larger_of_delay_and_capped_crawl_delay(crawl_delay: float | None, delay_ms: int) -> None:
    assert outcome_for(200, None, [], POL, crawl_delay).delay_ms == delay_ms


def test_retry_after_on_429_and_503_is_capped() -> None:
    assert outcome_for(429, None, [("Retry-After", "120")], POL, None, now=NOW).retry_after_ms == 120_000
    assert outcome_for(503, None, [("retry-after", "99999")], POL, None, now=NOW).retry_after_ms == 600_000
    date = email.utils.formatdate(NOW + 30, usegmt=True)
    assert outcome_for(503, None, [("Retry-After", date)], POL, None, now=NOW).retry_after_ms == 30_000
    assert outcome_for(503, None, [("Retry-After", "whenever")], POL, None, now=NOW).retry_after_ms == 0
    # Retry-After on other statuses does not drive the host back-off
    assert outcome_for(301, None, [("Retry-After", "120")], POL, None, now=NOW).retry_after_ms == 0


def test_adaptive_delay_follows_a_slow_server_within_the_crawl_delay_cap() -> None:
    adaptive = Politeness(delay=1.0, adaptive_delay=3.0, max_crawl_delay=30.0)
    assert outcome_for(200, None, [], adaptive, None, elapsed_ms=100).delay_ms == 1000  # fast: the plain delay
    assert outcome_for(200, None, [], adaptive, None, elapsed_ms=2000).delay_ms == 6000  # 3 x 2 s
    assert outcome_for(200, None, [], adaptive, None, elapsed_ms=60_000).delay_ms == 30_000  # capped
    assert outcome_for(200, None, [], POL, None, elapsed_ms=2000).delay_ms == 1000  # off by default


def test_403_is_a_slow_down_signal_only_when_asked() -> None:
    assert not outcome_for(403, None, [], POL, None).failed
    slow = outcome_for(403, None, [], Politeness(slow_down_403=True), None)
    assert slow.failed and not slow.retry  # back off, but do not ask for the forbidden page again


def test_jitter_only_ever_lengthens_a_gap() -> None:
    rng = random.Random(1)
    gaps = [jittered(1000, 0.5, rng) for _ in range(200)]
    assert min(gaps) >= 1000 and max(gaps) <= 1500 and len(set(gaps)) > 50
    assert jittered(1000, 0.0) == 1000 and jittered(0, 0.5) == 0
