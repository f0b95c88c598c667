"""robots.txt against a real local server: RFC 9309 status handling, redirects, size cap."""

from __future__ import annotations

import asyncio
import email.utils

import pytest
from aiohttp import web

from tests.fetch.servers import local_cfg, read_request, run, serve_raw
from tests.politeness.robots_env import BEHAVIOUR, HITS, ROBOTS_TTL, Clock, robots_env
from webtrawl.errors import IpPolicyError


def test_rules_of_the_product_token_group_apply_with_merged_groups() -> None:
    async def body() -> None:
        async with robots_env() as (port, _app, cache, _store, _clock):
            origin = f"http://rules.test:{port}"
            rules = await cache.fetch(origin)
        assert not rules.unavailable
        assert rules.allowed(f"{origin}/public/page")  # our group, not the '*' one that disallows all
        assert not rules.allowed(f"{origin}/private/x")
        assert rules.allowed(f"{origin}/private/ok/y")  # longest match wins
        assert not rules.allowed(f"{origin}/also-secret")  # second 'webtrawl' group merged in
        assert rules.crawl_delay == 2.5

    run(body())


@pytest.mark.parametrize(
    ("user_agent", "public_allowed"),
    [
        ("otherbot/2.0", True),
        ("nobody/1.0 (+https://example.invalid)", False),
        # written as Googlebot's: the otherbot group applies (its token was "mozilla": the '*' group, every page)
        ("Mozilla/5.0 (compatible; otherbot/2.0; +https://example.invalid/bot)", True),
        ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36", False),  # a browser's: '*'
    ],
)
def test_other_product_tokens_get_their_own_group_or_star(user_agent: str, public_allowed: bool) -> None:
    async def body() -> None:
        cfg = local_cfg(user_agent=user_agent)
        async with robots_env(cfg) as (port, _app, cache, _store, _clock):
            origin = f"http://rules.test:{port}"
            rules = await cache.fetch(origin)
        assert rules.allowed(f"{origin}/public/page") is public_allowed
        assert rules.crawl_delay is None

    run(body())


@pytest.mark.parametrize("host", ["missing.test", "forbidden.test"])
def test_4xx_means_allow_all(host: str) -> None:
    async def body() -> None:
        async with robots_env() as (port, _app, cache, store, clock):
            origin = f"http://{host}:{port}"
            rules = await cache.fetch(origin)
            assert not rules.unavailable
            assert rules.allowed(f"{origin}/anything")
            assert rules.crawl_delay is None
            assert store.ttls[origin] == ROBOTS_TTL
            clock.now += ROBOTS_TTL - 1
            assert await cache.cached(origin) is rules  # kept for the full robots TTL

    run(body())


@pytest.mark.parametrize("host", ["down.test", "busy.test"])
def test_5xx_and_429_mean_unavailable(host: str) -> None:
    async def body() -> None:
        async with robots_env() as (port, _app, cache, _store, _clock):
            origin = f"http://{host}:{port}"
            rules = await cache.fetch(origin)
        assert rules.unavailable
        assert not rules.allowed(f"{origin}/")
        assert rules.status in (503, 429)

    run(body())


def test_unavailable_is_retried_with_growing_gaps_then_kept_for_the_robots_ttl() -> None:
    async def body() -> None:
        async with robots_env(retry_base_s=10.0, unavailable_limit=3) as (port, app, cache, _store, clock):
            origin = f"http://down.test:{port}"
            first = await cache.fetch(origin)
            assert first.failures == 1
            clock.now += 9
            assert await cache.cached(origin) is first
            clock.now += 2
            assert await cache.cached(origin) is None  # time to ask again
            second = await cache.fetch(origin)
            assert second.failures == 2
            clock.now += 19
            assert await cache.cached(origin) is second
            clock.now += 2
            assert await cache.cached(origin) is None
            third = await cache.fetch(origin)
            assert third.failures == 3 and third.unavailable
            clock.now += ROBOTS_TTL - 1
            assert await cache.cached(origin) is third  # given up for a full TTL
            clock.now += 2
            assert await cache.cached(origin) is None

            async def healed_robots(request: web.Request) -> web.Response:
                return web.Response(text="User-agent: *\nDisallow: /x\n")

            app[BEHAVIOUR]["down.test"] = healed_robots
            healed = await cache.fetch(origin)
            assert not healed.unavailable and healed.failures == 0
            assert healed.allowed(f"{origin}/y") and not healed.allowed(f"{origin}/x")
            assert app[HITS]["down.test"] == 4

    run(body())


@pytest.mark.parametrize("retry_after", ["600", email.utils.formatdate(Clock().now + 600, usegmt=True)])
@pytest.mark.parametrize("status", [503, 429])
def test_an_unavailable_robots_txt_is_not_asked_again_before_its_retry_after(status: int, retry_after: str) -> None:
    """A robots.txt answered 503 or 429 with ``Retry-After: 600`` (seconds or an HTTP date) was asked again after
    --robots-retry (60 s), as if the server had said nothing; a page's 503 honoured it (politeness/backoff.py)."""

    async def later(request: web.Request) -> web.Response:
        return web.Response(status=status, headers={"Retry-After": retry_after})

    async def body() -> None:
        async with robots_env() as (port, app, cache, _store, clock):
            app[BEHAVIOUR]["later.test"] = later
            origin = f"http://later.test:{port}"
            rules = await cache.fetch(origin)
            assert rules.unavailable and rules.expires_at == clock.now + 600
            clock.now += 599
            assert await cache.cached(origin) is rules  # not asked again before the server's time
            clock.now += 2
            assert await cache.cached(origin) is None

    run(body())


def test_timeout_and_refused_connection_mean_unavailable() -> None:
    async def stall(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await reader.read()

    async def body() -> None:
        cfg = local_cfg(timeouts={"robots": 0.3})
        async with robots_env(cfg) as (_port, _app, cache, _store, _clock), serve_raw(stall) as raw_port:
            stalled = await cache.fetch(f"http://stall.test:{raw_port}")
        assert stalled.unavailable and stalled.error == "timeout"

        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
        try:
            async with robots_env() as (_port, _app, cache, _store, _clock):
                refused = await cache.fetch(f"http://refused.test:{closed_port}")
        finally:
            sock.close()
        assert refused.unavailable and refused.error == "connect"

    run(body())


def test_redirects_followed_up_to_five_then_allow_all() -> None:
    async def body() -> None:
        async with robots_env() as (port, app, cache, _store, _clock):
            five = await cache.fetch(f"http://hops5.test:{port}")
            six = await cache.fetch(f"http://hops6.test:{port}")
            assert app[HITS]["hops5.test"] == 6  # first request + 5 redirects
            assert app[HITS]["hops6.test"] == 6  # the 7th request is never made
        assert not five.allowed(f"http://hops5.test:{port}/after-hops")
        assert not six.unavailable
        assert six.allowed(f"http://hops6.test:{port}/after-hops")
        assert six.error == "redirects"

    run(body())


def test_cross_origin_redirect_is_followed() -> None:
    async def body() -> None:
        async with robots_env() as (port, app, cache, _store, _clock):
            rules = await cache.fetch(f"http://cross.test:{port}")
            assert app[HITS]["rules.test"] == 1
        assert not rules.allowed(f"http://cross.test:{port}/private/x")
        assert rules.allowed(f"http://cross.test:{port}/public")

    run(body())


def test_a_redirect_to_an_origin_s_own_robots_txt_uses_what_that_origin_fetched() -> None:
    """cross.test's robots.txt redirects to rules.test's, which rules.test's own lease fetched already: not asked again
    (it was, outside rules.test's lease and gap, while its pages may be fetched). An unavailable one counts too."""

    async def body() -> None:
        async with robots_env() as (port, app, cache, _store, clock):
            await cache.fetch(f"http://rules.test:{port}")
            rules = await cache.fetch(f"http://cross.test:{port}")
            assert app[HITS]["rules.test"] == 1 and app[HITS]["cross.test"] == 1
            assert not rules.allowed(f"http://cross.test:{port}/private/x")
            assert rules.allowed(f"http://cross.test:{port}/public")

            async def down(request: web.Request) -> web.Response:
                return web.Response(status=503, headers={"Retry-After": "300"})

            app[BEHAVIOUR]["rules.test"] = down
            clock.now += ROBOTS_TTL + 1  # both expired: rules.test is down now
            assert (await cache.fetch(f"http://rules.test:{port}")).unavailable
            later = await cache.fetch(f"http://cross.test:{port}")
            assert app[HITS]["rules.test"] == 2 and app[HITS]["cross.test"] == 2
            assert later.unavailable and later.expires_at == clock.now + 300  # rules.test's Retry-After holds

    run(body())


def test_a_redirect_to_a_robots_txt_given_up_asks_it_again() -> None:
    """rules.test's own robots.txt was given up (kept unavailable for the robots TTL): cross.test, queued again by
    trawl requeue, asks it itself, as trawl requeue promises, and counts its own tries."""

    async def body() -> None:
        async with robots_env(unavailable_limit=2) as (port, app, cache, _store, clock):
            app[BEHAVIOUR]["rules.test"] = app[BEHAVIOUR]["down.test"]
            for _ in range(2):
                given_up = await cache.fetch(f"http://rules.test:{port}")
                clock.now += 120
            assert given_up.failures == 2 and given_up.fresh(clock.now)
            rules = await cache.fetch(f"http://cross.test:{port}")
            assert app[HITS]["rules.test"] == 3 and rules.unavailable and rules.failures == 1

    run(body())


def test_rules_taken_from_another_origin_expire_with_them() -> None:
    """cross.test's copy of rules.test's rules is as old as they are: asked again when theirs expire (RFC 9309 2.4:
    not used for longer than the robots TTL), not a full TTL after the copy was taken."""

    async def body() -> None:
        async with robots_env() as (port, _app, cache, _store, clock):
            fetched_at = clock.now
            await cache.fetch(f"http://rules.test:{port}")
            clock.now += ROBOTS_TTL * 0.6
            rules = await cache.fetch(f"http://cross.test:{port}")
            assert rules.expires_at == fetched_at + ROBOTS_TTL

    run(body())


def test_rules_of_a_shared_robots_txt_expire_with_its_download() -> None:
    """Two origins redirect to rules.test's robots.txt (never fetched for rules.test itself): the second, later, takes
    the first's download, and keeps it only until that one's robots TTL is over."""

    async def body() -> None:
        async with robots_env() as (port, app, cache, _store, clock):
            app[BEHAVIOUR]["cross2.test"] = app[BEHAVIOUR]["cross.test"]
            fetched_at = clock.now
            await cache.fetch(f"http://cross.test:{port}")
            clock.now += ROBOTS_TTL * 0.6
            rules = await cache.fetch(f"http://cross2.test:{port}")
            assert app[HITS]["rules.test"] == 1
            assert rules.expires_at == fetched_at + ROBOTS_TTL
            assert not rules.allowed(f"http://cross2.test:{port}/private/x")

    run(body())


def test_redirect_to_a_refused_port_means_allow_all() -> None:
    async def body() -> None:
        async with robots_env() as (port, _app, cache, _store, _clock):
            rules = await cache.fetch(f"http://badport.test:{port}")
        assert not rules.unavailable and rules.allowed(f"http://badport.test:{port}/x")
        assert rules.error == "redirect-port-policy"

    run(body())


def test_refused_origin_raises_the_policy_error() -> None:
    async def body() -> None:
        cfg = local_cfg(ip_allow=[], politeness={"robots_ttl": ROBOTS_TTL})
        async with robots_env(cfg) as (port, _app, cache, _store, _clock):
            with pytest.raises(IpPolicyError):
                await cache.fetch(f"http://rules.test:{port}")

    run(body())


def test_crawl_delay_is_read() -> None:
    async def body() -> None:
        async with robots_env() as (port, _app, cache, _store, _clock):
            rules = await cache.fetch(f"http://delay.test:{port}")
        assert rules.crawl_delay == 7.0
        assert not rules.allowed(f"http://delay.test:{port}/tmp/a")

    run(body())


def test_gzip_encoded_robots_is_decoded() -> None:
    async def body() -> None:
        async with robots_env() as (port, _app, cache, _store, _clock):
            rules = await cache.fetch(f"http://gz.test:{port}")
        assert not rules.allowed(f"http://gz.test:{port}/zipped/file")
        assert rules.allowed(f"http://gz.test:{port}/other")

    run(body())


def test_a_robots_txt_that_does_not_decode_as_labelled_is_read_as_it_came() -> None:
    """A server that labels a plain robots.txt ``Content-Encoding: gzip`` (or br): its rules still hold. Before: the
    decoding failed, the file was read as empty, and every page it disallows was fetched."""

    async def body() -> None:
        async with robots_env() as (port, app, cache, _store, _clock):
            for coding in ("gzip", "br"):

                async def mislabelled(request: web.Request, coding: str = coding) -> web.Response:
                    resp = web.Response(body=b"User-agent: *\nDisallow: /private\n", content_type="text/plain")
                    resp.headers["Content-Encoding"] = coding
                    return resp

                app[BEHAVIOUR][f"{coding}.test"] = mislabelled
                rules = await cache.fetch(f"http://{coding}.test:{port}")
                assert not rules.allowed(f"http://{coding}.test:{port}/private/x"), coding
                assert rules.allowed(f"http://{coding}.test:{port}/public") and rules.error == "bad-content"

    run(body())


def test_oversize_robots_is_cut_at_the_cap_on_a_line_boundary() -> None:
    async def body() -> None:
        cfg = local_cfg(limits={"max_robots": 1000})
        async with robots_env(cfg) as (port, _app, cache, _store, _clock):
            rules = await cache.fetch(f"http://big.test:{port}")
        origin = f"http://big.test:{port}"
        assert not rules.allowed(f"{origin}/early")  # inside the first 1000 bytes
        assert rules.allowed(f"{origin}/late")  # beyond the cap: never read
        assert rules.allowed(f"{origin}/lemon")  # the half line "Disallow: /lem" was dropped, not obeyed
        assert len(rules.body) <= 1000

    run(body())


def test_an_origin_whose_robots_txt_another_origin_was_sent_to_is_not_asked_again() -> None:
    """http://host's robots.txt redirected to https://host's (the web's commonest redirect), then https://host was
    crawled: it asked its robots.txt again, a second request for the same file (found by the robots sweep)."""

    async def body() -> None:
        async with robots_env() as (port, app, cache, _store, _clock):
            await cache.fetch(f"http://cross.test:{port}")
            rules = await cache.cached(f"http://rules.test:{port}")
            assert rules is not None and app[HITS]["rules.test"] == 1
            assert not rules.allowed(f"http://rules.test:{port}/private/x")

    run(body())
