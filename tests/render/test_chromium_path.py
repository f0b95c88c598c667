"""``--chromium PATH`` as a user gives it: a path relative to where the crawl is started."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from tests.render.onepage import render_one
from webtrawl.errors import RenderError

pytest.importorskip("playwright.async_api", reason="Playwright (the render extra) drives Chromium")
if shutil.which("chromium") is None:
    pytest.skip("Debian's chromium package is not installed", allow_module_level=True)


def test_a_relative_chromium_path_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `--chromium chr` (or ./chr) passed the start-up check, then every render failed with 'spawn chr ENOENT':
    # the driver looked the bare name up on PATH.
    (tmp_path / "chr").symlink_to(shutil.which("chromium") or "chromium")
    monkeypatch.chdir(tmp_path)
    body = b"<html><head><title>t</title></head><body><script>document.title = 'built'</script></body></html>"
    response = asyncio.run(render_one(body, chromium=Path("chr")))
    assert b"<title>built</title>" in (response.dom or b""), response


def test_a_chromium_that_does_not_start_is_one_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # A --render crawl whose browser never starts failed every page with 'render' and said nothing in its log (the
    # fetcher's INFO 'starting Chromium again' lines only): the node ended 'finished' with no page fetched.
    broken = tmp_path / "chromium"
    broken.write_text("#!/bin/sh\necho 'cannot open display' >&2\nexit 1\n")
    broken.chmod(0o755)
    with caplog.at_level("WARNING", logger="webtrawl.render"), pytest.raises(RenderError):
        asyncio.run(render_one(b"<html><body>x</body></html>", chromium=broken))
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and warnings[0].startswith(f"Chromium ({broken}) did not start: "), warnings
