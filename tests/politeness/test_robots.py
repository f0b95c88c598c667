"""robots.txt against a real local server: RFC 9309 status handling, redirects, size cap, caching."""

from __future__ import annotations

import asyncio
import email.utils
import gzip
import zlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import msgspec
import pytest
from aiohttp import web

from tests.fetch.servers import local_cfg, local_client, read_request, run, serve_app, serve_raw
from webtrawl.config import CrawlConfig
from webtrawl.errors import IpPolicyError
from webtrawl.fetch import RobotsCache
from webtrawl.politeness import RobotsRules

RULES = b"""# test robots
User-agent: *
Disallow: /

User-agent: webtrawl
Disallow: /private
Allow: /private/ok
Crawl-delay: 2.5

User-agent: otherbot
Allow: /

User-agent: webtrawl
Disallow: /also-secret
"""
ROBOTS_TTL = 1000.0


class DictStore:
    """The frontier's robots store interface, backed by a dict (counts reads to show the LRU works)."""

    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.ttls: dict[str, float] = {}
        self.gets = 0

    async def get_robots(self, origin: str) -> bytes | None:
        self.gets += 1
        return self.data.get(origin)

    async def set_robots(self, origin: str, value: bytes, ttl_s: float) -> None:
        self.data[origin] = value
        self.ttls[origin] = ttl_s


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
HITS = web.AppKey("hits", Counter[str])
BEHAVIOUR = web.AppKey("behaviour", dict[str, Handler])


def _robots_app() -> web.Application:
    """One server for many origins: the behaviour of /robots.txt depends on the Host name."""

    async def text(body: bytes, status: int = 200) -> web.Response:
        return web.Response(body=body, status=status, content_type="text/plain")

    async def hop(request: web.Request) -> web.Response:
        n = int(request.query.get("n", "0"))
        total = int(request.host.split(".")[0].removeprefix("hops"))
        if n < total:
            return web.Response(status=301, headers={"Location": f"/robots.txt?n={n + 1}"})
        return await text(b"User-agent: *\nDisallow: /after-hops\n")

    async def gz(request: web.Request) -> web.Response:
        resp = web.Response(body=gzip.compress(b"User-agent: *\nDisallow: /zipped\n"), content_type="text/plain")
        resp.headers["Content-Encoding"] = "gzip"
        return resp

    async def big(request: web.Request) -> web.Response:
        head = b"User-agent: *\nDisallow: /early\n"
        padding = b"# padding padding padding padding padding padding\n" * 19  # 950 bytes of comments
        return await text(head + padding + b"Disallow: /lemonade-stand\nDisallow: /late\n")

    async def cross(request: web.Request) -> web.Response:
        port = request.url.port
        return web.Response(status=302, headers={"Location": f"http://rules.test:{port}/robots.txt"})

    async def to_bad_port(request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": "http://rules.test:25/robots.txt"})

    behaviour: dict[str, Handler] = {
        "rules.test": lambda r: text(RULES),
        "missing.test": lambda r: text(b"not here", 404),
        "forbidden.test": lambda r: text(b"go away", 403),
        "down.test": lambda r: text(b"oops", 503),
        "busy.test": lambda r: text(b"slow down", 429),
        "delay.test": lambda r: text(b"User-agent: *\nCrawl-delay: 7\nDisallow: /tmp\n"),
        "hops5.test": hop,
        "hops6.test": hop,
        "gz.test": gz,
        "big.test": big,
        "cross.test": cross,
        "badport.test": to_bad_port,
    }

    async def robots(request: web.Request) -> web.StreamResponse:
        host = request.host.split(":")[0]
        request.app[HITS][host] += 1
        return await request.app[BEHAVIOUR][host](request)

    app = web.Application()
    app[HITS] = Counter()
    app[BEHAVIOUR] = behaviour
    app.router.add_get("/robots.txt", robots)
    return app


@asynccontextmanager
async def robots_env(
    cfg: CrawlConfig | None = None, **cache_kwargs: object
) -> AsyncIterator[tuple[int, web.Application, RobotsCache, DictStore, Clock]]:
    app = _robots_app()
    cfg = cfg or local_cfg(politeness={"robots_ttl": ROBOTS_TTL})
    store, clock = DictStore(), Clock()
    async with serve_app(app) as port, local_client(cfg) as client:
        cache = RobotsCache(store, client, cfg.fetch, cfg.politeness, cfg.limits, clock=clock, **cache_kwargs)  # type: ignore[arg-type]
        yield port, app, cache, store, clock


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
    [("otherbot/2.0", True), ("nobody/1.0 (+https://example.invalid)", False)],
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


def test_lru_then_store_then_other_process() -> None:
    async def body() -> None:
        async with robots_env(max_entries=1) as (port, app, cache, store, clock):
            rules_origin = f"http://rules.test:{port}"
            delay_origin = f"http://delay.test:{port}"
            assert await cache.cached(rules_origin) is None  # nothing anywhere yet
            fetched = await cache.fetch(rules_origin)
            gets = store.gets
            assert await cache.cached(rules_origin) is fetched  # process-local hit
            assert store.gets == gets
            await cache.fetch(delay_origin)  # evicts rules.test from the 1-entry LRU
            from_store = await cache.cached(rules_origin)
            assert store.gets > gets
            assert from_store is not None and from_store is not fetched
            assert not from_store.allowed(f"{rules_origin}/private/x")
            assert from_store.crawl_delay == 2.5
            assert app[HITS]["rules.test"] == 1  # never fetched twice

            other = local_cfg()
            other_process = RobotsCache(store, cache._client, other.fetch, other.politeness, other.limits, clock=clock)
            shared = await other_process.cached(rules_origin)
            assert shared is not None and shared.allowed(f"{rules_origin}/public")

            clock.now += ROBOTS_TTL + 1
            assert await cache.cached(rules_origin) is None  # expired everywhere
            assert await other_process.cached(rules_origin) is None

    run(body())


def test_concurrent_fetches_of_one_origin_share_one_request() -> None:
    async def body() -> None:
        async with robots_env() as (port, app, cache, _store, _clock):
            origin = f"http://rules.test:{port}"
            results = await asyncio.gather(*(cache.fetch(origin) for _ in range(5)))
            assert app[HITS]["rules.test"] == 1
            assert all(r is results[0] for r in results)

    run(body())


def test_encode_is_compact_and_round_trips() -> None:
    body = RULES + b"# " + b"comment " * 2000 + b"\n"
    rules = RobotsRules(body, token="webtrawl", status=200, failures=0, expires_at=123.0)
    data = rules.encode()
    assert len(data) < len(body) // 4  # the rules are stored, compressed, not the comments
    back = RobotsRules.decode(data)
    assert back.token == "webtrawl" and back.expires_at == 123.0 and back.body_bytes == len(body)
    assert back.allowed("http://x.test/public") and not back.allowed("http://x.test/private/a")
    assert back.allowed("http://x.test/private/ok") and not back.allowed("http://x.test/also-secret")
    assert back.crawl_delay == 2.5
    again = RobotsRules.decode(back.encode())  # a loaded value stores the same rules again
    assert not again.allowed("http://x.test/also-secret") and again.crawl_delay == 2.5
    down = RobotsRules.decode(RobotsRules(unavailable=True, failures=3, error="http-5xx").encode())
    assert down.unavailable and down.failures == 3 and down.error == "http-5xx"
    with pytest.raises(ValueError):
        RobotsRules.decode(b"definitely not msgpack of ours")


def _version_1(body: bytes, compress: Callable[[bytes], bytes] | None = None) -> bytes:
    """A value as nodes before stored-rules wrote it: the whole body (zlib-compressed if ``compress``)."""
    stored = [1, "webtrawl", 200, False, 0, 0.0, "", compress is not None, compress(body) if compress else body]
    return msgspec.msgpack.encode(stored)


def test_rules_stored_whole_by_an_earlier_version_still_decode() -> None:
    # Stores written before the rules were stored instead of the body, compressed by zlib or ISA-L (the same
    # format), or not at all: a crawl resumed by this version reads them.
    body = RULES + b"# " + b"comment " * 2000 + b"\n"
    for value in (_version_1(body, lambda b: zlib.compress(b, 6)), _version_1(body)):
        back = RobotsRules.decode(value)
        assert back.body == body and not back.allowed("http://x.test/private/a") and back.crawl_delay == 2.5
        assert RobotsRules.decode(back.encode()).crawl_delay == 2.5
    cut = msgspec.msgpack.decode(_version_1(body, lambda b: zlib.compress(b, 6)))
    cut[8] = cut[8][:-10]  # cut short: not ours to guess
    with pytest.raises(ValueError):
        RobotsRules.decode(msgspec.msgpack.encode(cut))


def test_stored_rules_are_one_product_tokens() -> None:
    stored = RobotsRules.decode(RobotsRules(RULES, token="webtrawl").encode())
    assert stored.usable_for("webtrawl", stored.max_bytes)
    assert not stored.usable_for("otherbot", stored.max_bytes)  # otherbot's group says Allow: /
    assert not stored.usable_for("webtrawl", stored.max_bytes + 1)  # a bigger cap could read more rules
    whole = RobotsRules.decode(_version_1(RULES))
    assert whole.usable_for("otherbot", 1024)  # the body itself: compiled for any token
    nothing = RobotsRules.decode(RobotsRules(b"", token="webtrawl").encode())
    assert nothing.usable_for("otherbot", 1024) and nothing.allowed("http://x.test/private")


def test_a_fetcher_with_another_product_token_fetches_again() -> None:
    async def body() -> None:
        async with robots_env() as (port, app, cache, store, clock):
            origin = f"http://rules.test:{port}"
            await cache.fetch(origin)
            other = local_cfg(user_agent="otherbot/1.0")
            theirs = RobotsCache(store, cache._client, other.fetch, other.politeness, other.limits, clock=clock)
            assert await theirs.cached(origin) is None  # webtrawl's rules are not otherbot's
            assert (await theirs.fetch(origin)).allowed(f"{origin}/private/x")
            assert app[HITS]["rules.test"] == 2

    run(body())


def test_lru_bound_counts_the_compiled_rules_not_just_the_body() -> None:
    one_origin = RobotsRules(RULES, token="webtrawl").size
    assert one_origin > 2 * len(RULES)

    async def body() -> None:
        async with robots_env(max_bytes=one_origin + len(RULES)) as (port, _app, cache, store, _clock):
            rules_origin = f"http://rules.test:{port}"
            await cache.fetch(rules_origin)
            gets = store.gets
            assert await cache.cached(rules_origin) is not None
            assert store.gets == gets  # kept in the process
            await cache.fetch(f"http://delay.test:{port}")  # counted by its compiled size: no room for both
            assert await cache.cached(rules_origin) is not None
            assert store.gets > gets  # came back from the store

    run(body())
