"""JSONL records: one line per write, chunk files renamed when full, resume and torn-tail recovery."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from webtrawl.store import JsonlWriter, seal_open_files


def _rec(i: int) -> dict[str, object]:
    return {"url": f"http://site.example/{i}", "status": 200, "title": f'Tïtle {i} "q"\n', "error": None}


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


def test_each_write_is_one_line_on_disk_at_once(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path, "n-p0", 100)
    writer.write(_rec(0))
    path = tmp_path / "n-p0-00000.jsonl.open"
    # Visible to another reader without flush/close: nothing is buffered in the process.
    assert _lines(path) == [_rec(0)]
    writer.write(_rec(1))
    assert path.read_bytes().count(b"\n") == 2
    writer.close()
    assert not path.exists()
    assert _lines(tmp_path / "n-p0-00000.jsonl") == [_rec(0), _rec(1)]


def test_chunks_rotate_and_sequence_continues(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path, "n-p0", 3)
    for i in range(7):
        writer.write(_rec(i))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "n-p0-00000.jsonl",
        "n-p0-00001.jsonl",
        "n-p0-00002.jsonl.open",
    ]
    writer.close()
    assert [len(_lines(tmp_path / f"n-p0-{i:05d}.jsonl")) for i in range(3)] == [3, 3, 1]

    again = JsonlWriter(tmp_path, "n-p0", 3)
    again.write(_rec(99))
    again.close()
    assert _lines(tmp_path / "n-p0-00003.jsonl") == [_rec(99)]
    JsonlWriter(tmp_path, "n-p1", 3).close()
    assert not list(tmp_path.glob("n-p1*")), "no empty chunk files"


def test_torn_last_line_is_cut_on_seal(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path, "k", 100)
    for i in range(5):
        writer.write(_rec(i))
    path = writer.current_path
    assert path is not None
    full = path.read_bytes()
    good = full.rfind(b"\n", 0, len(full) - 1) + 1  # end of the 4th line
    for cut in range(good + 1, len(full)):
        path.write_bytes(full[:cut])
        assert seal_open_files(tmp_path) == [tmp_path / "k-00000.jsonl"]
        assert _lines(tmp_path / "k-00000.jsonl") == [_rec(i) for i in range(4)], cut
        (tmp_path / "k-00000.jsonl").rename(path)
    path.write_bytes(full)
    seal_open_files(tmp_path)
    assert _lines(tmp_path / "k-00000.jsonl") == [_rec(i) for i in range(5)]


def test_garbage_after_good_lines_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "g-00002.jsonl.open"
    path.write_bytes(b'{"a":1}\n{"b":2}\n\x00\x00\x00\x00\n{"c":3}\n')
    (tmp_path / "e-00000.jsonl.open").write_bytes(b'{"half":')
    assert seal_open_files(tmp_path) == [tmp_path / "g-00002.jsonl"]
    assert _lines(tmp_path / "g-00002.jsonl") == [{"a": 1}, {"b": 2}]
    assert not (tmp_path / "e-00000.jsonl.open").exists()


_CHILD = """
import sys
from pathlib import Path
from webtrawl.store import JsonlWriter
w = JsonlWriter(Path(sys.argv[1]), "killed", 1000)
i = 0
while True:
    w.write({"i": i, "pad": "x" * 5000})
    print(i, flush=True)
    i += 1
"""


def test_records_survive_a_killed_writer(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    assert child.stdout is not None
    acknowledged = -1
    for line in child.stdout:
        acknowledged = int(line)
        if acknowledged >= 200:
            break
    child.kill()
    child.wait()
    sealed = seal_open_files(tmp_path)
    assert sealed == [tmp_path / "killed-00000.jsonl"]
    numbers = [rec["i"] for rec in _lines(sealed[0])]
    assert numbers == list(range(len(numbers)))
    assert len(numbers) > acknowledged, "every write that returned is on disk"


def test_write_some_fills_the_chunk_with_one_write_and_says_how_many(tmp_path: Path) -> None:
    writer = JsonlWriter(tmp_path, "d", 4)
    writer.write(_rec(0))
    records = [_rec(i) for i in range(1, 8)]
    assert writer.write_some(records) == 3, "only what fits in the current chunk file"
    assert writer.write_some(records[3:]) == 4
    writer.close()
    assert _lines(tmp_path / "d-00000.jsonl") == [_rec(i) for i in range(4)]
    assert _lines(tmp_path / "d-00001.jsonl") == [_rec(i) for i in range(4, 8)]
