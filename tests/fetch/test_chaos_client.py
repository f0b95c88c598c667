"""The fetch client against the chaos hosts: every hostile answer ends as one named failure, within its caps.

Each behaviour is fetched through its own host name (``<behaviour>.chaos.test``), the way a crawl meets it; the
caps are set small here so the tests stay fast, and each test asserts the cap or timeout that stopped it.
"""

from __future__ import annotations

import time

import pytest

from tests.fetch.servers import local_cfg, local_client, run
from tests.fixtures.web_fixtures import chaos_of
from webtrawl.errors import WebtrawlError
from webtrawl.fetch.response import Response
from webtrawl_testweb import TestWeb

TOTAL = 1.5
MAX_BODY = 512 * 1024


def _fetch(web: TestWeb, url: str) -> tuple[Response | None, str, float]:
    """(response, error reason, seconds taken) of one GET with the test caps."""
    cfg = local_cfg(ca_file=web.ca_file, timeouts={"total": TOTAL}, limits={"max_body": MAX_BODY})
    result: list[tuple[Response | None, str, float]] = []

    async def body() -> None:
        async with local_client(cfg) as client:
            started = time.monotonic()
            try:
                resp = await client.fetch(url)
                result.append((resp, "", time.monotonic() - started))
            except WebtrawlError as exc:
                result.append((None, exc.reason, time.monotonic() - started))

    run(body())
    return result[0]


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("slow-head", "timeout"),
        ("slow-body", "timeout"),
        ("reset", "reset"),
        ("cl-long", "reset"),
        ("expired", "tls"),
        ("wrongname", "tls"),
        ("plainhttp", "tls"),
    ],
)
def test_transport_failures_are_named(chaos_web: TestWeb, name: str, reason: str) -> None:
    resp, error, took = _fetch(chaos_web, chaos_of(chaos_web).url(name))
    assert (resp, error) == (None, reason)
    assert took < TOTAL + 1.0  # the total timeout holds even for a body that trickles in forever


def test_endless_and_huge_bodies_stop_at_the_body_cap(chaos_web: TestWeb) -> None:
    for name in ("endless", "huge"):
        resp, error, _ = _fetch(chaos_web, chaos_of(chaos_web).url(name))
        assert error == "" and resp is not None
        assert resp.truncated and len(resp.body) == MAX_BODY


def test_a_body_longer_than_its_content_length_is_cut_at_the_length(chaos_web: TestWeb) -> None:
    resp, error, _ = _fetch(chaos_web, chaos_of(chaos_web).url("cl-short"))
    assert error == "" and resp is not None and not resp.truncated
    assert resp.body == b"<html><head><title>short</title></head><body>"


def test_bombs_arrive_small_and_still_encoded(chaos_web: TestWeb) -> None:
    for name, coding in (("gzip-bomb", "gzip"), ("brotli-bomb", "br")):
        resp, error, _ = _fetch(chaos_web, chaos_of(chaos_web).url(name))
        assert error == "" and resp is not None
        assert resp.header("content-encoding") == coding and len(resp.body) < MAX_BODY


def test_each_behaviour_is_also_reachable_by_path(chaos_web: TestWeb) -> None:
    chaos = chaos_of(chaos_web)
    resp, error, _ = _fetch(chaos_web, chaos.url("plain", "/b/err503-retry-after/"))
    assert resp is not None and resp.status == 503 and resp.header("retry-after") == "1"
    resp, error, _ = _fetch(chaos_web, chaos.url("plain", "/b/reset/"))
    assert error == "reset"
