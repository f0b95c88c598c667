"""The HTTP client over TLS against real local servers: verification (CA file, names, --insecure) and bodies of
many TLS records read at once."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import mmap
from pathlib import Path

import pytest
import uvloop
from aiohttp import web

from tests.fetch.servers import local_cfg, local_client, make_tls, run, serve_app
from webtrawl.errors import TlsError


def _tls_app() -> web.Application:
    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="secure hello")

    async def big(request: web.Request) -> web.Response:
        return web.Response(body=_big_body(int(request.match_info["n"])))

    app = web.Application()
    app.router.add_get("/", hello)
    app.router.add_get("/big/{n}", big)
    return app


@functools.cache
def _big_body(n: int) -> bytes:
    """1 MB (some 64 TLS records) that differ everywhere, so a record decrypted into the wrong place shows."""
    return b"".join(hashlib.sha256(b"%d-%d" % (n, i)).digest() for i in range(1_000_000 // 32))


def test_https_with_the_ca_file_works(tmp_path: Path) -> None:
    tls = make_tls(tmp_path, "secure.test")

    async def body() -> None:
        async with (
            serve_app(_tls_app(), tls.server_ctx) as port,
            local_client(local_cfg(ca_file=tls.ca_file)) as client,
        ):
            resp = await client.fetch(f"https://secure.test:{port}/")
        assert resp.status == 200
        assert resp.body == b"secure hello"

    run(body())


@pytest.mark.parametrize("parts", [False, True])
def test_https_bodies_read_at_the_same_time_arrive_byte_exact(tmp_path: Path, parts: bool) -> None:
    """Many TLS records of several connections at once (each read on its own, at most a record at a time), whole
    or left in their chunks."""
    tls = make_tls(tmp_path, "secure.test")

    async def body() -> None:
        async with (
            serve_app(_tls_app(), tls.server_ctx) as port,
            local_client(local_cfg(ca_file=tls.ca_file, total=60.0)) as client,
        ):
            urls = [f"https://secure.test:{port}/big/{n}" for n in range(4)]
            resps = await asyncio.gather(*(client.fetch(url, parts=parts) for url in urls))
        assert [r.body + b"".join(r.body_parts) == _big_body(n) for n, r in enumerate(resps)] == [True] * 4
        assert all(bool(r.body_parts) is parts for r in resps)

    run(body())


def test_an_idle_tls_connection_gives_back_its_read_buffer_and_reads_again(tmp_path: Path) -> None:
    """uvloop's 256 KiB TLS read buffer of a connection waiting in the pool is given back (its pages read as zeros:
    the ciphertext they held is gone), and the connection reads the next answer whole."""
    tls = make_tls(tmp_path, "secure.test")

    async def body() -> None:
        async with (
            serve_app(_tls_app(), tls.server_ctx) as port,
            local_client(local_cfg(ca_file=tls.ca_file, total=60.0)) as client,
        ):
            first = await client.fetch(f"https://secure.test:{port}/big/0")
            [(proto, _)] = [entry for queue in client._idle_pool().values() for entry in queue]
            buffer = proto.transport.get_extra_info("uvloop.sslproto").get_buffer(1)
            page = mmap.PAGESIZE
            assert len(buffer) >= 4 * page
            assert not any(buffer[page : len(buffer) - page])
            again = await client.fetch(f"https://secure.test:{port}/big/1")
            assert proto.transport is not None and [e[0] for q in client._idle_pool().values() for e in q] == [proto]
        assert (first.body, again.body) == (_big_body(0), _big_body(1))

    uvloop.run(body())


def test_https_with_an_unknown_ca_is_a_tls_error(tmp_path: Path) -> None:
    tls = make_tls(tmp_path, "secure.test")

    async def body() -> None:
        async with serve_app(_tls_app(), tls.server_ctx) as port, local_client(local_cfg()) as client:
            with pytest.raises(TlsError) as info:
                await client.fetch(f"https://secure.test:{port}/")
        assert "certificate" in str(info.value).lower()

    run(body())


def test_https_with_a_certificate_for_another_name_is_a_tls_error(tmp_path: Path) -> None:
    tls = make_tls(tmp_path, "other.test")

    async def body() -> None:
        async with (
            serve_app(_tls_app(), tls.server_ctx) as port,
            local_client(local_cfg(ca_file=tls.ca_file)) as client,
        ):
            with pytest.raises(TlsError):
                await client.fetch(f"https://secure.test:{port}/")

    run(body())


def test_https_insecure_skips_verification(tmp_path: Path) -> None:
    tls = make_tls(tmp_path, "other.test")

    async def body() -> None:
        async with (
            serve_app(_tls_app(), tls.server_ctx) as port,
            local_client(local_cfg(insecure=True)) as client,
        ):
            resp = await client.fetch(f"https://secure.test:{port}/")
        assert resp.body == b"secure hello"

    run(body())
