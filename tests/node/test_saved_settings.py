"""What a crawl keeps of its settings for a resume (``crawl.json``)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from webtrawl.config import load
from webtrawl.node.saved import SAVED_SETTINGS
from webtrawl.node.startup import save_settings

HEADER = "Authorization: Bearer s3cret-t0ken"


def test_saved_settings_keep_a_header_for_the_resume_readable_by_their_owner_only(tmp_path: Path) -> None:
    """A resume sends the crawl's --header again, so crawl.json keeps it; it was readable by every user of the
    machine (0644), an Authorization or a Cookie with it."""
    path = tmp_path / SAVED_SETTINGS
    path.write_text("{}")
    path.chmod(0o644)  # as an earlier version left it
    save_settings(load({"header": [HEADER]}, env={}), tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["header"] == [HEADER]
    path.unlink()
    save_settings(load({"header": [HEADER]}, env={}), tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
