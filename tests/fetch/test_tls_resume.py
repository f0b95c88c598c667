"""TLS session resumption: a host's next connection resumes the session of its last one."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from aiohttp import web

from tests.fetch.servers import local_cfg, local_client, make_tls, run, serve_app


def _reuse_app(seen: list[bool]) -> web.Application:
    async def page(request: web.Request) -> web.Response:
        assert request.transport is not None
        seen.append(request.transport.get_extra_info("ssl_object").session_reused)
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/", page)
    return app


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["tls1.2", "tls1.3"])
def test_a_new_connection_to_a_host_resumes_its_tls_session(tmp_path: Path, version: ssl.TLSVersion) -> None:
    tls = make_tls(tmp_path, "secure.test", "other.test")
    tls.server_ctx.maximum_version = version
    seen: list[bool] = []

    async def body() -> None:
        async with (
            serve_app(_reuse_app(seen), tls.server_ctx) as port,
            local_client(local_cfg(ca_file=tls.ca_file)) as client,
        ):
            for host in ("secure.test", "secure.test", "other.test", "secure.test"):
                resp = await client.fetch(f"https://{host}:{port}/")
                assert resp.status == 200
                assert client.trim_idle(keep=0) == 1  # the next request opens a new connection

    run(body())
    # first connection: full handshake; then resumed, except for the host never met before
    assert seen == [False, True, False, True]
