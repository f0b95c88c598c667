"""Small files replaced whole (crawl.json, the node id, a Parquet directory's column types)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from webtrawl.wholefile import replace_whole


def test_a_reader_sees_the_old_file_or_the_new_never_half(tmp_path: Path) -> None:
    path = tmp_path / "crawl.json"
    path.write_bytes(b"old")
    with path.open("rb") as before:
        replace_whole(path, b"new")
        assert before.read() == b"old"
    assert path.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["crawl.json"]  # no temporary file left


def test_a_private_file_is_its_owners_alone(tmp_path: Path) -> None:
    replace_whole(tmp_path / "secret", b"x", mode=0o600)
    replace_whole(tmp_path / "shared", b"x")
    assert stat.S_IMODE((tmp_path / "secret").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) & 0o044 == 0o044  # readable by others (umask 022)


def test_a_writer_whose_temporary_name_is_taken_does_not_overwrite_it(tmp_path: Path) -> None:
    """Two processes saving the same file at once each write their own temporary file: the node id's was one fixed
    name (``node-id.tmp``), so one run's rename could take the other's half-written file, and the other's rename
    then failed ('output directory ... is not writable')."""
    path = tmp_path / "node-id"
    for _ in range(3):
        replace_whole(path, b"a\n")
    other = tmp_path / "node-id.tmp"
    other.write_bytes(b"another writer's")
    replace_whole(path, b"b\n")
    assert other.read_bytes() == b"another writer's" and path.read_bytes() == b"b\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")
    with pytest.raises(TypeError):
        replace_whole(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f"]
