"""The fetcher's decisions for one leased URL, without Redis or sockets (fakes of the frontier and the fetcher):
robots.txt first, the politeness gap each release sets, retries, redirects not followed, and which fetcher the
route picks by role."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from tests.fetch.servers import local_cfg
from tests.fetch.visits_setup import DELAY_MS, PAGE, ROBOTS, Setup, lease
from webtrawl.errors import BadHttp, ConnectError, InputError, TurnTimeout
from webtrawl.fetch.base import (
    FetcherContext,
    FetchRequest,
    HttpFetcher,
    build_fetchers,
    check_fetchers,
    fetcher_class,
)
from webtrawl.fetch.testing import FakeFetcher, FakeWeb, answer
from webtrawl.fetch.visit import GAP_MARGIN_MS
from webtrawl.frontier import UrlAction


def test_robots_txt_comes_first_and_the_page_waits_for_the_hosts_next_turn() -> None:
    setup = Setup({ROBOTS: answer(200, b"User-agent: *\nDisallow: /private\n"), PAGE: answer(200, b"<p>hi</p>")})
    setup.run(lease())
    assert [url for url, _ in setup.web.requests] == [ROBOTS]
    (release,) = setup.frontier.releases
    assert (release.action, release.delay_ms, release.counters) == (
        UrlAction.HEAD,
        DELAY_MS + GAP_MARGIN_MS,
        {"robots-fetched": 1},
    )
    assert setup.pages.pages == [] and setup.budget == 11  # the page is not fetched yet: its budget goes back
    before = time.monotonic()
    setup.run(lease(n=2))  # its next turn: the rules are known now
    after = time.monotonic()
    assert [url for url, _ in setup.web.requests] == [ROBOTS, PAGE]
    release = setup.frontier.releases[-1]
    assert (release.action, release.delay_ms, release.failed) == (UrlAction.KEEP, DELAY_MS + GAP_MARGIN_MS, False)
    assert release.counters == {"fetched": 1}
    (page,) = setup.pages.pages
    assert (page.status, page.body, page.lease.url) == (200, b"<p>hi</p>", PAGE)
    ttl = setup.cfg.frontier.process_ttl  # the parsers' deadline, counted from before the release was sent
    assert before + ttl <= page.keep_until <= after + ttl


def test_a_disallowed_page_is_recorded_without_a_request_and_the_gap_is_unchanged() -> None:
    setup = Setup({ROBOTS: answer(200, b"User-agent: *\nDisallow: /\n")})
    setup.run(lease(n=1), lease(n=2))
    assert setup.web.requested(PAGE) == 0
    release = setup.frontier.releases[-1]
    assert (release.action, release.delay_ms) == (UrlAction.KEEP, 0)
    assert [(p.error, p.status) for p in setup.pages.pages] == [("robots", 0)]


def test_crawl_delay_sets_the_gap() -> None:
    setup = Setup({ROBOTS: answer(200, b"User-agent: *\nCrawl-delay: 7\n"), PAGE: answer(200)})
    setup.run(lease(n=1), lease(n=2))
    assert [r.delay_ms for r in setup.frontier.releases] == [7000 + GAP_MARGIN_MS] * 2


def test_a_503_is_retried_with_back_off_then_recorded_when_its_retries_are_used_up() -> None:
    busy = answer(503, headers=[("Retry-After", "120")])
    setup = Setup({ROBOTS: answer(404), PAGE: busy})
    setup.run(lease(n=1), lease(n=2))
    retry = setup.frontier.releases[-1]
    assert (retry.action, retry.failed, retry.counters) == (UrlAction.RETRY, True, {"retries": 1})
    assert retry.retry_after_ms == 120_000 + GAP_MARGIN_MS
    assert setup.pages.pages == []
    setup.run(lease(retries=1, n=3))  # --max-retries 1: this try is the last
    last = setup.frontier.releases[-1]
    assert (last.action, last.failed) == (UrlAction.KEEP, True)
    assert [p.status for p in setup.pages.pages] == [503]


def test_a_connection_error_is_retried_and_then_recorded_with_its_reason() -> None:
    setup = Setup({ROBOTS: answer(404), PAGE: ConnectError("refused")})
    setup.run(lease(n=1), lease(n=2), lease(retries=1, n=3))
    assert [r.action for r in setup.frontier.releases] == [UrlAction.HEAD, UrlAction.RETRY, UrlAction.KEEP]
    assert [(p.error, p.status) for p in setup.pages.pages] == [("connect", 0)]


def test_a_page_that_ran_out_of_time_waiting_for_a_big_body_turn_goes_back_to_its_queue() -> None:
    """The fetcher's own load (fetch/wire.py): no host failure; a retry is used, so it cannot go round for ever."""
    setup = Setup({ROBOTS: answer(404), PAGE: TurnTimeout("timed out while other big bodies took their turns")})
    setup.run(lease(n=1), lease(n=2))
    given_back = setup.frontier.releases[-1]
    assert (given_back.action, given_back.failed, given_back.counters) == (UrlAction.RETRY, False, {"retries": 1})
    assert given_back.delay_ms == DELAY_MS + GAP_MARGIN_MS  # the host's gap holds: a request was made
    assert setup.pages.pages == [] and setup.budget == 12  # neither lease used its page (robots.txt, given back)
    setup.run(lease(retries=1, n=3))  # --max-retries 1: this try is the last
    last = setup.frontier.releases[-1]
    assert (last.action, last.failed) == (UrlAction.KEEP, False)
    assert [(p.error, p.status) for p in setup.pages.pages] == [("turn-timeout", 0)]


def test_an_answer_that_is_not_http_is_retried_once_whatever_max_retries_says() -> None:
    """The server sends the same bytes again: a second try mends only a connection fed stray bytes. Its host backs
    off for it, as for any failure: a host that answers garbage is slowed down."""
    bad = BadHttp("not an HTTP/1.x answer: Too many headers received")
    setup = Setup({ROBOTS: answer(404), PAGE: bad}, max_retries=3)
    setup.run(lease(n=1), lease(n=2))
    retry = setup.frontier.releases[-1]
    assert (retry.action, retry.failed, retry.counters) == (UrlAction.RETRY, True, {"retries": 1})
    setup.run(lease(retries=1, n=3))
    last = setup.frontier.releases[-1]
    assert (last.action, last.failed) == (UrlAction.KEEP, True)
    assert [(p.error, p.status) for p in setup.pages.pages] == [("bad-http", 0)]


def test_a_redirect_is_handed_on_as_it_came_and_not_followed() -> None:
    moved = answer(301, headers=[("Location", "http://b.test/new")])
    setup = Setup({ROBOTS: answer(404), PAGE: moved})
    setup.run(lease(n=1), lease(n=2))
    assert [url for url, _ in setup.web.requests] == [ROBOTS, PAGE]
    (page,) = setup.pages.pages
    assert page.status == 301 and ("Location", "http://b.test/new") in page.headers
    assert setup.frontier.releases[-1].action == UrlAction.KEEP


def test_an_unreachable_robots_txt_holds_the_url_back_without_using_its_retries() -> None:
    setup = Setup({ROBOTS: answer(503)})
    setup.run(lease(n=1), lease(n=2))
    assert setup.web.requested(PAGE) == 0
    held = setup.frontier.releases[-1]
    assert held.action == UrlAction.HEAD and held.delay_ms >= DELAY_MS and held.counters == {}
    assert setup.pages.pages == []


@pytest.mark.parametrize("mode", ["always", "auto"])
def test_the_route_picks_the_fetcher_by_role(mode: str) -> None:
    shell = b'<html><body><div id="root"></div><script src="/app.js"></script></body></html>'
    setup = Setup({ROBOTS: answer(404), PAGE: answer(200, shell)}, render=mode)
    assert setup.render is not None
    setup.run(lease(n=1), lease(n=2))
    (page,) = setup.pages.pages
    assert page.render_reason.startswith("always" if mode == "always" else "shell")
    assert [r.url for r in setup.render.requests] == [PAGE]
    assert [r.url for r in setup.plain.requests] == ([] if mode == "always" else [PAGE])
    if mode == "auto":
        assert setup.render.requests[0].prior is not None  # the HTTP answer is reused: one request to the host
        assert setup.frontier.marked_render == ["a.test"]


class CannedFetcher(FakeFetcher):
    """A user's fetcher class, named by --fetcher tests.fetch.test_visits:CannedFetcher: every page is 'canned'."""

    role = "plain"

    def __init__(self, ctx: FetcherContext, body: str = "canned") -> None:
        super().__init__(FakeWeb({PAGE: answer(200, body.encode())}), name="canned")


def test_the_fetcher_process_builds_its_fetchers_by_name_one_per_role() -> None:
    cfg = local_cfg(fetcher=["tests.fetch.test_visits:CannedFetcher?body=tinned"])
    client: Any = FakeWeb()
    ctx = FetcherContext(cfg.fetch, cfg.rendering, cfg.limits, 120.0, client, None)  # type: ignore[arg-type]
    fetchers = build_fetchers(cfg.fetch.fetcher, ctx)
    assert isinstance(fetchers.plain, CannedFetcher) and fetchers.render is None
    no_rules: Any = None  # the fake asks nothing of them
    answered = asyncio.run(fetchers.plain.fetch(FetchRequest(PAGE), no_rules))
    assert answered.body == b"tinned"  # the name's ?options are the class's keyword arguments
    assert isinstance(build_fetchers((), ctx).plain, HttpFetcher)  # the built-in of the role
    with pytest.raises(InputError, match=r"--fetcher tests\.fetch\.nosuch:F: cannot import"):
        fetcher_class("tests.fetch.nosuch:F")
    with pytest.raises(InputError, match="not a Fetcher class"):
        fetcher_class("tests.fetch.test_visits:lease")
    with pytest.raises(InputError, match="http already fetches for the plain role"):
        check_fetchers(["http", "tests.fetch.test_visits:CannedFetcher"])
    check_fetchers(["tests.fetch.test_visits:CannedFetcher", "browser"])


class _PartsClient:
    """Stands for HttpClient: answers with the body in two chunks when asked for parts."""

    def __init__(self) -> None:
        self.asked: list[bool] = []

    async def fetch(self, url: str, *, headers: dict[str, str] | None = None, parts: bool = False) -> Any:
        self.asked.append(parts)
        return answer(200, b"" if parts else b"<p>hi</p>", body_parts=[b"<p>", b"hi</p>"] if parts else [])


@pytest.mark.parametrize("render", ["never", "auto"])
def test_the_plain_fetch_leaves_the_body_in_parts_unless_a_render_route_reads_it(render: str) -> None:
    cfg = local_cfg(render=render)
    client = _PartsClient()
    ctx = FetcherContext(cfg.fetch, cfg.rendering, cfg.limits, 120.0, client, None)  # type: ignore[arg-type]
    no_rules: Any = None
    resp = asyncio.run(HttpFetcher(ctx).fetch(FetchRequest(PAGE), no_rules))
    assert client.asked == [render == "never"]
    assert resp.body + b"".join(resp.body_parts) == b"<p>hi</p>"


def test_a_body_in_parts_goes_to_the_parsers_whole() -> None:
    parts = answer(200, b"", body_parts=[b"<p>", b"hi", b"</p>"])
    setup = Setup({ROBOTS: answer(404), PAGE: parts})
    setup.run(lease(), lease(n=2))
    (page,) = setup.pages.pages  # PageCollector joins the parts, as a parser receives them
    assert (page.status, page.body) == (200, b"<p>hi</p>")


def test_a_failure_that_parks_the_host_ends_its_url_and_hands_on_its_queue_unrequested() -> None:
    """fetch/giveup.py: the URL whose failure parked its host goes to the parsers with its retries left unused, then
    one host-down page for each URL the frontier gives up, chunk by chunk: no request, no budget, not fetched."""
    setup = Setup({ROBOTS: answer(404), PAGE: answer(503)}, max_retries=3)
    queued = [lease(f"http://a.test/q{i}", n=10 + i) for i in range(5)]
    setup.frontier.park["a.test"] = 2
    setup.frontier.give_up_chunks["a.test"] = [queued[:3], queued[3:]]
    setup.run(lease(n=1), lease(n=2))
    assert [url for url, _ in setup.web.requests] == [ROBOTS, PAGE]
    release = setup.frontier.releases[-1]
    assert (release.action, release.failed) == (UrlAction.RETRY, True)  # the frontier kept it (Parked)
    pages = setup.pages.pages
    assert [(p.lease.url, p.status, p.error, p.retried_out) for p in pages] == [(PAGE, 503, "", True)] + [
        (x.url, 0, "host-down", True) for x in queued
    ]
    assert pages[-1].error_detail == "not requested: a.test failed 2 times in a row (last: HTTP 503)"
    ttl = setup.cfg.frontier.process_ttl
    assert all(0 < p.keep_until <= time.monotonic() + ttl for p in pages)
    assert setup.budget == 11  # robots.txt's lease gave its page back; the parked URL used one; the given-up none
    assert setup.frontier.counted == [{"fetched": 1}]  # what its KEEP release would have counted
    assert setup.frontier.give_up_chunks["a.test"] == []


def test_a_robots_txt_given_up_ends_its_url_and_hands_on_its_origins_queue_unrequested() -> None:
    """fetch/giveup.py: once robots.txt is given up (--robots-give-up 1 here), the URL that meets it ends kept for
    trawl requeue, and the origin's queued URLs end with the same reason and detail, unrequested, without budget."""
    setup = Setup({ROBOTS: answer(503)}, robots_give_up=1)
    queued = [lease(f"http://a.test/q{i}", n=10 + i) for i in range(5)]
    setup.frontier.give_up_chunks["a.test"] = [queued[:3], queued[3:]]
    setup.run(lease(n=1), lease(n=2))
    assert [url for url, _ in setup.web.requests] == [ROBOTS]
    release = setup.frontier.releases[-1]
    assert (release.action, release.failed, release.counters) == (UrlAction.KEEP, False, {})
    detail = "robots.txt unreachable 1 times in a row (http-5xx)"
    # the queue first, while its lease keeps the host
    assert [(p.lease.url, p.status, p.error, p.error_detail, p.retried_out, p.given_up) for p in setup.pages.pages] == [
        (x.url, 0, "robots-unavailable", detail, True, True) for x in queued
    ] + [(PAGE, 0, "robots-unavailable", detail, True, False)]
    assert setup.frontier.given_up_origins == ["http://a.test", "http://a.test"]  # its origin's URLs only
    assert setup.budget == 11  # robots.txt's lease gave its page back; the given-up pages took none
