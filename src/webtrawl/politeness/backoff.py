"""What one fetch result means for its host: the gap before the next request, back-off, and whether to retry.

The frontier owns the clock and the exponential back-off (it counts a host's consecutive failures); this
module only classifies a result, so the rules live in one small table a reader can check:

=============================  ======  =====  ==========================================
result                         failed  retry  note
=============================  ======  =====  ==========================================
2xx, 3xx, 4xx (except below)   no      no     normal gap: delay or Crawl-delay
403 with slow_down_403         yes     no     a slow-down signal (back-off), the URL is not asked again
408 Request Timeout            no      yes    the request, not the host, was slow
429, 503                       yes     yes    Retry-After (capped) replaces the back-off
500, 502, 504                  yes     yes    the host is struggling
other 5xx (501...), 600-999    yes     no     permanent for this URL, still a host failure
timeout, connect, reset        yes     yes    transient transport errors
bad-http                       yes     once   a head that is not HTTP/1.x: the same comes again
render                         yes     yes    the browser died or the render ran out of time
render-memory                  no      no     the page passed --render-page-memory (crashed)
proxy                          no      yes    every --proxy is dead: the host was not contacted
dns-timeout                    yes     yes    no DNS answer (timeout, SERVFAIL), unlike "dns"
dns, tls                       yes     no     the host is broken for every URL: back off
too-large, bomb, bad-content   no      no     the host answered; the content is the problem
policy reasons (ip-policy...)  no      no     no request was sent: no gap needed
=============================  ======  =====  ==========================================

With ``adaptive_delay`` k > 0 the gap after an answer is max(delay, k x the response time), like Scrapy's
AutoThrottle but kept by the frontier (the next-allowed time is in Redis), so it holds across fetchers and nodes: a
server that slows down under load gets proportionally more room. ``jittered`` lengthens a gap by a random share
(``delay_jitter``), so a crawl's requests to a server do not tick like a clock; it never shortens one.
"""

from __future__ import annotations

import datetime
import email.utils
import random
import re
import time
from collections.abc import Sequence

import msgspec

from webtrawl.config import Politeness
from webtrawl.errors import BadHttp

_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_RETRY_AFTER_STATUSES = frozenset({429, 503})
_TRANSIENT_REASONS = frozenset({"timeout", "connect", "reset", "transport", "dns-timeout", "render"})
_ONCE_REASONS = frozenset({BadHttp.reason})  # retried at most once, whatever --max-retries says
HOST_BROKEN_REASONS = frozenset({"dns", "tls"})  # no name, or no trustworthy TLS: every URL of the host fails
_NO_REQUEST_REASONS = frozenset(
    {"ip-policy", "port-policy", "scheme", "bad-url", "robots", "robots-unavailable", "policy"}
)
_DELTA_RE = re.compile(r"^\d+(?:\.\d+)?$")


class HostOutcome(msgspec.Struct, frozen=True):
    """The fields of a frontier ``Release`` that depend on the result (see the table in the module doc)."""

    delay_ms: int  # politeness gap from now after this request
    failed: bool = False  # counts as a host failure: exponential back-off, parking after many
    retry_after_ms: int = 0  # the server's Retry-After, capped at backoff_max; 0: none
    retry: bool = False  # the URL may be tried again (the caller checks lease.retries against the cap)
    max_retries: int = -1  # a cap on its retries below --max-retries; -1: none


def parse_retry_after(value: str, now: float) -> float | None:
    """Seconds to wait from ``now`` (epoch) per a Retry-After value: delta-seconds or an HTTP-date; >= 0."""
    text = value.strip()
    if not text:
        return None
    if _DELTA_RE.match(text):
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):  # a year past C's long overflows (found by fuzzing)
        return None
    if when.tzinfo is None:  # RFC 9110 dates are GMT; a zone-less one is read as such
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - now)


def outcome_for(
    status: int | None,
    error_reason: str | None,
    headers: Sequence[tuple[str, str]],
    politeness: Politeness,
    crawl_delay: float | None,
    *,
    now: float | None = None,
    elapsed_ms: float = 0.0,
) -> HostOutcome:
    """Classify one fetch: ``status`` of a complete answer, else the ``reason`` of the error that ended it."""
    delay = politeness.delay
    if crawl_delay is not None:
        delay = max(delay, min(crawl_delay, politeness.max_crawl_delay))
    if politeness.adaptive_delay > 0 and elapsed_ms > 0:
        delay = max(delay, min(politeness.adaptive_delay * elapsed_ms / 1000.0, politeness.max_crawl_delay))
    delay_ms = int(delay * 1000)
    if status is None or status <= 0:
        reason = error_reason or "transport"
        if reason in _NO_REQUEST_REASONS:
            return HostOutcome(delay_ms=0)
        if reason == "proxy":  # no live proxy: the host was not contacted; its URL tries again in its turn
            return HostOutcome(delay_ms=delay_ms, retry=True)
        if reason in _TRANSIENT_REASONS:
            return HostOutcome(delay_ms=delay_ms, failed=True, retry=True)
        if reason in _ONCE_REASONS:
            return HostOutcome(delay_ms=delay_ms, failed=True, retry=True, max_retries=1)
        return HostOutcome(delay_ms=delay_ms, failed=reason in HOST_BROKEN_REASONS)
    retry_after_ms = 0
    if status in _RETRY_AFTER_STATUSES:
        retry_after_ms = _retry_after_ms(headers, politeness.backoff_max, time.time() if now is None else now)
    return HostOutcome(
        delay_ms=delay_ms,
        failed=status == 429 or status >= 500 or (status == 403 and politeness.slow_down_403),
        retry_after_ms=retry_after_ms,
        retry=status in _RETRY_STATUSES,
    )


def _retry_after_ms(headers: Sequence[tuple[str, str]], cap_s: float, now: float) -> int:
    for name, value in headers:
        if name.lower() == "retry-after":
            seconds = parse_retry_after(value, now)
            if seconds is not None:
                return int(min(seconds, cap_s) * 1000)
            return 0
    return 0


def jittered(gap_ms: int, jitter: float, rng: random.Random | None = None) -> int:
    """``gap_ms`` lengthened by a random 0..``jitter`` share of it (never shortened)."""
    if jitter <= 0 or gap_ms <= 0:
        return gap_ms
    return gap_ms + round(gap_ms * jitter * (rng or random).random())
