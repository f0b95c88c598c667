"""Callbacks the API tests crawl with (imported by name in the crawler's parser processes)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from webtrawl import Page


def title(page: Page) -> Iterator[dict[str, Any]]:
    yield {"title": page.css("h1::text").get()}
