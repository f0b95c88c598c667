"""``--encrypt-to`` with the ``parquet:`` and ``json:`` sinks: each sealed file is an age file that Debian's ``age -d``
decrypts to the Parquet file or JSON array the plain sink writes, with no plaintext on disk at any time; a writer
killed with its file open loses nothing (each write in its journal becomes a file of that format of its own)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.store.agekit import AgeKey, age_key
from tests.store.sinkdata import ctx, products, store
from webtrawl.store.base import Sink, SinkContext
from webtrawl.store.batchlog import Marked, rollback
from webtrawl.store.registry import open_sink, seal_left_open

pq = pytest.importorskip("pyarrow.parquet", reason="the parquet extra writes Parquet files")
pytest.importorskip("pyrage", reason="the encrypt extra encrypts outputs")

BATCHES = [[products(f"http://a.test/{n}", 3), products(f"http://a.test/{n}b", 1)] for n in range(5)]


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> AgeKey:
    return age_key(tmp_path_factory.mktemp("age"))


def _context(out: Path, encrypt_to: tuple[str, ...], prefix: str = "n-p0") -> SinkContext:
    return msgspec.structs.replace(ctx(out, prefix=prefix, chunk=6), encrypt_to=encrypt_to)


def _write(sink: Sink, batches: list[Any]) -> None:
    for batch in batches:
        store(sink, batch)


def _no_plaintext(directory: Path) -> None:
    for path in directory.rglob("*"):
        assert path.is_dir() or path.name.endswith((".age", ".age.open")), path
        assert path.is_dir() or b"a.test" not in path.read_bytes(), path


def _table_rows(data: bytes) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = pq.read_table(io.BytesIO(data)).to_pylist()
    return rows


def test_encrypted_parquet_files_decrypt_to_the_plain_parquet_files(tmp_path: Path, key: AgeKey) -> None:
    for tag, encrypt_to in (("plain", ()), ("secret", (key.recipient,))):
        sink = open_sink(f"parquet:{tmp_path / tag}", "items", _context(tmp_path, encrypt_to))
        _write(sink, BATCHES)
        if tag == "secret":
            _no_plaintext(tmp_path / tag)  # while the file is open too: its journal
        sink.close()
    plain = sorted((tmp_path / "plain").iterdir())
    secret = sorted((tmp_path / "secret").iterdir())
    assert len(plain) == 3 and [p.name + ".age" for p in plain] == [p.name for p in secret], "rotated alike"
    _no_plaintext(tmp_path / "secret")
    for clear, sealed in zip(plain, secret, strict=True):
        decrypted = pq.read_table(io.BytesIO(key.decrypt(sealed)))
        assert decrypted.equals(pq.read_table(clear))
        assert pq.ParquetFile(io.BytesIO(key.decrypt(sealed))).metadata.num_row_groups == 1


def test_an_encrypted_json_file_decrypts_to_the_plain_array(tmp_path: Path, key: AgeKey) -> None:
    for tag, encrypt_to in (("plain", ()), ("secret", (key.recipient,))):
        sink = open_sink(f"json:{tmp_path / tag / 'items.json'}", "items", _context(tmp_path, encrypt_to))
        _write(sink, BATCHES)
        if tag == "secret":
            _no_plaintext(tmp_path / tag)
        sink.close()
    assert [p.name for p in (tmp_path / "secret").iterdir()] == ["items-n-p0-00000.json.age"]
    _no_plaintext(tmp_path / "secret")
    decrypted = key.decrypt(tmp_path / "secret" / "items-n-p0-00000.json.age")
    assert decrypted == (tmp_path / "plain" / "items.json").read_bytes()
    assert len(json.loads(decrypted)) == 20


def _killed(sink: Sink) -> None:
    """kill -9: nothing of the writer runs again (its open file is neither sealed nor removed)."""
    del sink


@pytest.mark.parametrize("scheme", ["parquet", "json"])
def test_a_killed_writer_loses_no_row_and_each_of_its_writes_decrypts_whole(
    tmp_path: Path, key: AgeKey, scheme: str
) -> None:
    out = tmp_path / "out"
    url = f"parquet:{out}" if scheme == "parquet" else f"json:{out / 'items.json'}"
    context = msgspec.structs.replace(_context(tmp_path, (key.recipient,), prefix="n-p1"), chunk=10)
    sink = open_sink(url, "items", context)
    _write(sink, BATCHES[:3])  # Parquet: sealed at 10 rows or more (12)
    _write(sink, BATCHES[3:])  # open at the kill: journalled, one entry per write
    journals = [p.name for p in out.glob("*.open")]
    assert len(journals) == 1 and journals[0].endswith(".age.open")
    _killed(sink)
    seal_left_open([url], "n")  # the node's start, before its parsers: what they left is sealed
    assert not list(out.glob("*.open"))
    after = open_sink(url, "items", context)
    _write(after, BATCHES[:1])  # fetched again after the resume
    after.close()
    _no_plaintext(out)
    rows: list[dict[str, Any]] = []
    for path in sorted(out.iterdir()):  # written, recovered, written after: in name order, in write order
        data = key.decrypt(path)
        rows += _table_rows(data) if scheme == "parquet" else json.loads(data)
    urls = [row["url"] for row in rows]
    assert urls == [item.url for batch in [*BATCHES, *BATCHES[:1]] for page in batch for item in page.items]
    recovered = [path.name for path in out.iterdir() if re.search(r"-\d{5}-\d{5}\.", path.name)]
    assert len(recovered) == (2 if scheme == "parquet" else 5), "each write of the open file: a file of its own"


@pytest.mark.parametrize("scheme", ["parquet", "json"])
def test_a_batch_a_killed_parser_had_begun_is_rolled_back_so_its_rows_are_written_once(
    tmp_path: Path, key: AgeKey, scheme: str
) -> None:
    """The parsers' batch log: a kill between a batch's writes and its completion leaves its pages to be fetched
    again; the next life cuts the open encrypted file's journal back to the batch's mark first."""
    out = tmp_path / "out"
    url = f"parquet:{out}" if scheme == "parquet" else f"json:{out / 'items.json'}"
    context = msgspec.structs.replace(_context(tmp_path, (key.recipient,), prefix="n-p1"), chunk=10)
    sink = open_sink(url, "items", context)
    _write(sink, BATCHES[:2])
    assert isinstance(sink, Marked)
    marks = sink.marks()  # the batch log's Begin
    sink.write(BATCHES[2])  # written, not completed: killed
    _killed(sink)
    rollback(marks)  # the next life (or the node's start), before the sinks open
    seal_left_open([url], "n")
    after = open_sink(url, "items", context)
    _write(after, BATCHES[2:])  # fetched again
    after.close()
    _no_plaintext(out)
    rows: list[dict[str, Any]] = []
    for path in sorted(out.iterdir()):
        data = key.decrypt(path)
        rows += _table_rows(data) if scheme == "parquet" else json.loads(data)
    assert [row["url"] for row in rows] == [item.url for batch in BATCHES for page in batch for item in page.items]
