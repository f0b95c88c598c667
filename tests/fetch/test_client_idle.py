"""The fetcher's HTTP client keeps a bounded number of idle keep-alive connections, the most recently used ones."""

from __future__ import annotations

from tests.fetch.servers import local_cfg, local_client, run
from webtrawl_testweb import TestWeb


def test_idle_connections_beyond_the_cap_are_closed_least_recently_used_first(testweb: TestWeb) -> None:
    cfg = local_cfg(ca_file=testweb.ca_file, ports=[testweb.http_port, testweb.https_port], idle_connections=4)
    origins = [host.origin for host in list(testweb.model.hosts())[:12]]  # http and https hosts
    mark = testweb.mark()

    async def body() -> None:
        async with local_client(cfg) as http:
            for origin in origins:
                assert (await http.fetch(origin + "/robots.txt")).status < 600
            http.trim_idle()
            assert http.idle_count() == 4
            for origin in (origins[-1], origins[0]):  # the last one used is still open, the first is not
                await http.fetch(origin + "/robots.txt")

    run(body())
    entries = sorted(testweb.entries(since=mark), key=lambda e: e.start_ms)
    first, last, again_last, again_first = entries[0], entries[-3], entries[-2], entries[-1]
    assert again_last.client_port == last.client_port  # reused
    assert again_first.client_port != first.client_port  # closed by the cap: a new connection


def test_a_sleeping_host_sessions_connection_outlives_newer_idle_ones(testweb: TestWeb) -> None:
    """A broad crawl opens new connections all the time; a host session waiting for its next turn must still find
    its own connection open then (closing the oldest first meant a new TLS handshake for nearly every page)."""
    cfg = local_cfg(ca_file=testweb.ca_file, ports=[testweb.http_port, testweb.https_port], idle_connections=4)
    origins = [host.origin for host in list(testweb.model.hosts())[:12]]
    session, others = origins[0], origins[1:]
    mark = testweb.mark()

    async def body() -> None:
        async with local_client(cfg) as http:
            await http.fetch(session + "/robots.txt")
            with http.keeping_idle(session + "/next-page"):
                for origin in others:  # other hosts' connections go idle after the session's
                    await http.fetch(origin + "/robots.txt")
                    http.trim_idle()
                assert http.idle_count() == 4
            await http.fetch(session + "/robots.txt")  # the session's next turn

    run(body())
    entries = sorted(testweb.entries(since=mark), key=lambda e: e.start_ms)
    assert (entries[0].scheme, entries[0].host) == (entries[-1].scheme, entries[-1].host)
    assert entries[-1].client_port == entries[0].client_port  # the same connection
