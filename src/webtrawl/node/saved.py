"""The settings a crawl saved in its output directory (``crawl.json``), read without loading the crawler."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from webtrawl.errors import StateError

SAVED_SETTINGS = "crawl.json"
NODE_LOCK = "node.lock"  # held by the node crawling into the directory, for its whole run


def load_saved_settings(out: Path) -> dict[str, Any] | None:
    """The settings an earlier run of this crawl saved, so that a plain resume crawls the same way."""
    path = out / SAVED_SETTINGS
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise StateError(f"cannot read the saved settings {path}: {exc}") from None
    if not isinstance(data, dict):
        raise StateError(f"{path} is not a settings object")
    return data
