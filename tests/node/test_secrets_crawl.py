"""A crawl given secrets (a --header token, a proxy's password, a hook with a webhook's token) shows none of them to
whoever reaches its dashboard: on a shared machine every local user can open 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

from tests.node.crawlrun import Crawl, dashboard_status, free_port, quick_args, wait_until
from webtrawl_testweb import TestWeb

SECRETS = ("S3CRET-HEADER", "S3CRET-PROXY", "S3CRET-HOOK")


def test_the_dashboard_shows_no_header_value_proxy_password_or_hook(testweb: TestWeb, tmp_path: Path) -> None:
    port = free_port()
    args = [*testweb.seeds(1), *quick_args(testweb), "--ui-port", str(port), "--keep-running"]
    args += ["--header", "Authorization: Bearer S3CRET-HEADER", "--proxy", "http://crawler:S3CRET-PROXY@127.0.0.1:1"]
    args += ["--changes", "--recrawl-after", "1h", "--on-change", "curl -s https://hooks.example/S3CRET-HOOK"]
    crawl = Crawl(tmp_path / "crawl", args)
    try:
        wait_until(lambda: bool(dashboard_status(port).get("settings")), 60, "the dashboard's settings", crawl)
        raw = json.dumps(dashboard_status(port))
    finally:
        crawl.interrupt()
        crawl.wait()
    assert [secret for secret in SECRETS if secret in raw] == []
    settings = json.loads(raw)["settings"]
    assert settings["header"] == ["Authorization: ***"]  # which headers are sent, not their values
    assert settings["proxy"] == ["http://crawler:***@127.0.0.1:1"]
