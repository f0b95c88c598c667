"""What the HTTP client keeps of its own secrets: the request headers a page carries on (its WARC request record)
are those the target got."""

from __future__ import annotations

from aiohttp import web

from tests.fetch.servers import local_cfg, local_client, run, serve_app

SEEN = web.AppKey("seen", list[dict[str, str]])


def _proxy_that_answers_itself() -> web.Application:
    """A forward proxy for plain HTTP that answers for the target (aiohttp serves the absolute-form request line)."""
    seen: list[dict[str, str]] = []

    async def page(request: web.Request) -> web.Response:
        seen.append(dict(request.headers))
        return web.Response(text="<html>hi</html>", content_type="text/html")

    app = web.Application()
    app[SEEN] = seen
    app.router.add_get("/", page)
    return app


def test_a_proxys_password_reaches_the_proxy_but_not_the_recorded_request() -> None:
    app = _proxy_that_answers_itself()

    async def body() -> None:
        async with serve_app(app) as port:
            cfg = local_cfg(proxy=[f"http://crawler:PROXYSECRET@127.0.0.1:{port}"])
            async with local_client(cfg) as client:
                resp = await client.fetch(f"http://site.test:{port}/")
        assert resp.status == 200
        assert app[SEEN][0]["Proxy-Authorization"].startswith("Basic ")  # the proxy was given its credentials
        assert [name for name, _ in resp.request_headers if name.lower() == "proxy-authorization"] == []
        assert ("Host", f"site.test:{port}") in resp.request_headers

    run(body())
