"""Request options end to end (the real ``trawl crawl`` against :class:`JsWeb`, no browser): ``--header``,
``--cookies`` and ``--proxy`` with a dead proxy that the hosts it was chosen for skip, and an HTTPS host crawled
through an HTTP proxy's ``CONNECT`` tunnels."""

from __future__ import annotations

import socket
import zlib
from pathlib import Path

from tests.fixtures.connect_proxy import ConnectProxy
from tests.node.crawlrun import Crawl, records
from webtrawl_testweb.jsweb import JsWeb


def test_headers_cookies_and_a_dead_proxy_skipped(tmp_path: Path) -> None:
    with JsWeb(plain_pages=2) as jsweb:
        _crawl_and_check(jsweb, tmp_path)


def _crawl_and_check(jsweb: JsWeb, tmp_path: Path) -> None:
    dead = socket.socket()  # bound, never listening: connecting is refused
    dead.bind(("127.0.0.1", 0))
    try:
        dead_proxy = f"http://127.0.0.1:{dead.getsockname()[1]}"
        live_proxy = f"http://127.0.0.1:{jsweb.port}"
        # the cookie host's own proxy (crc32 of the host picks it) is the dead one
        proxies = [live_proxy, live_proxy]
        proxies[zlib.crc32(b"cookie.js.test") % 2] = dead_proxy
        seeds = [jsweb.url("cookie.js.test"), jsweb.url("plain.js.test")]
        flags = ["--header", "X-Trawl-Test: hello", "--cookies", *(f"--proxy={p}" for p in proxies)]
        out = tmp_path / "crawl"
        seen, via = len(jsweb.test_headers), len(jsweb.proxied)
        crawl = Crawl(out, [*seeds, *jsweb.crawl_args("127.0.0.1/32"), "--delay", "0.2", "--fetchers", "1", *flags])
        assert crawl.wait(120) == 0, crawl.log()[-4000:]
    finally:
        dead.close()
    rows = {row["url"]: row for row in records(out)}
    assert rows[jsweb.url("cookie.js.test", "/check")]["title"] == "cookie: yes"
    assert all(row["status"] == 200 for row in rows.values()), rows
    assert jsweb.test_headers[seen:] and set(jsweb.test_headers[seen:]) == {"hello"}
    # every request went through the live proxy, the cookie host's included
    proxied = jsweb.proxied[via:]
    assert len(proxied) == len(jsweb.test_headers[seen:])
    assert {u for u in proxied if "/robots.txt" not in u} == set(rows)


def test_an_https_host_through_an_http_proxy_goes_by_connect_tunnels(tmp_path: Path) -> None:
    with JsWeb(plain_pages=2) as jsweb, ConnectProxy({jsweb.https_port}) as proxy:
        out = tmp_path / "crawl"
        mark, via = jsweb.log.mark(), len(jsweb.proxied)
        args = [*jsweb.crawl_args("127.0.0.1/32"), "--delay", "0.2", "--fetchers", "1", "--proxy", proxy.url]
        crawl = Crawl(out, [jsweb.url("plain.js.test", scheme="https"), *args])
        assert crawl.wait(120) == 0, crawl.log()[-4000:]
        entries = jsweb.entries(since=mark)
    rows = {row["url"]: row for row in records(out)}
    pages = ["/", *(f"/p/{k}" for k in range(1, jsweb.plain_pages + 1))]
    assert set(rows) == {jsweb.url("plain.js.test", p, scheme="https") for p in pages}
    assert all(row["status"] == 200 and row["error"] is None for row in rows.values()), rows
    # every request went through a tunnel to the HTTPS host: CONNECTs to it and nothing else, none refused
    assert proxy.connects and set(proxy.connects) == {("plain.js.test", jsweb.https_port)}
    assert proxy.refused == [] and jsweb.proxied[via:] == []
    assert sorted(e.path for e in entries) == sorted(["/robots.txt", *pages])
    assert {e.scheme for e in entries} == {"https"}
    assert proxy.tunneled_bytes > sum(e.nbytes for e in entries)  # the answers (and the TLS around them) came this way
