"""The dashboard's server without a browser: what it serves, the token, the bind rule."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from webtrawl.errors import InputError
from webtrawl.metrics.dashboard import Dashboard


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, bytes, str]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            return resp.status, resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), ""


def test_serves_the_page_its_assets_and_the_published_document() -> None:
    with Dashboard(0, title="webtrawl t1") as ui:
        base = f"http://127.0.0.1:{ui.port}/"
        status, body, ctype = _get(base)
        assert status == 200 and b"<title>webtrawl t1</title>" in body and ctype.startswith("text/html")
        status, body, _ = _get(base + "static/uPlot.iife.min.js")
        assert status == 200 and b"uPlot" in body  # shipped in the package: no CDN, works offline
        assert _get(base + "static/../../config.py")[0] == 404
        assert json.loads(_get(base + "api/status")[1]) == {"at": 0}
        ui.publish({"at": 12.5, "counters": {"fetched": 3}})
        assert json.loads(_get(base + "api/status")[1]) == {"at": 12.5, "counters": {"fetched": 3}}


def test_a_token_guards_the_data_but_not_the_page_code() -> None:
    with Dashboard(0, token="s3cret") as ui:
        base = f"http://127.0.0.1:{ui.port}/"
        assert _get(base + "api/status")[0] == 401
        assert _get(base + "api/status?token=wrong")[0] == 401
        assert _get(base + "api/status?token=s3cret")[0] == 200
        assert _get(base + "api/status", {"Authorization": "Bearer s3cret"})[0] == 200
        assert _get(base)[0] == 401
        assert _get(base + "static/dashboard.js")[0] == 200


def test_without_a_token_it_answers_only_to_loopback_names() -> None:
    """A page the operator opens can resolve its own name to 127.0.0.1 (DNS rebinding) and read a loopback
    dashboard from the browser: it comes with its own name as Host, which is refused."""
    with Dashboard(0) as ui:
        url = f"http://127.0.0.1:{ui.port}/api/status"
        for host in ("localhost", "127.0.0.1", "LOCALHOST.", "[::1]", "ui.localhost"):
            assert _get(url, {"Host": f"{host}:{ui.port}"})[0] == 200, host
        assert _get(url, {"Host": f"rebind.attacker.example:{ui.port}"})[0] == 403
        assert _get(url.replace("api/status", ""), {"Host": "attacker.example"})[0] == 403
    with Dashboard(0, token="t") as ui:  # with a token it may be served under any name (a reverse proxy's)
        assert _get(f"http://127.0.0.1:{ui.port}/api/status?token=t", {"Host": "crawl.example"})[0] == 200


def test_binding_beyond_loopback_requires_a_token() -> None:
    with pytest.raises(InputError, match="--ui-token"):
        Dashboard(0, bind="0.0.0.0")
    Dashboard(0, bind="::1")  # loopback: no token needed
    Dashboard(0, bind="0.0.0.0", token="t")


def test_a_port_in_use_is_one_clear_error() -> None:
    with Dashboard(0) as ui, pytest.raises(InputError, match="cannot serve the dashboard"):
        Dashboard(ui.port).start()
