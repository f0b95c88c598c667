"""Fixtures of the store tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.disk import tmpfs


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs mounted at a fresh directory (root only; skipped where mounting is not allowed)."""
    with tmpfs(tmp_path / "disk") as mount:
        yield mount
