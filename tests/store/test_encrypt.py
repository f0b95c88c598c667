"""``--encrypt-to``: every output file is an age file that Debian's ``age -d`` decrypts to exactly what the plain
writer writes; a writer killed with its file open loses nothing (each append in its journal becomes a file of its
own), and a sealed file is never doubled by its journal."""

from __future__ import annotations

import errno
import io
import json
import os
import random
from pathlib import Path
from typing import Any

import msgspec
import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.fixtures.disk import fill
from tests.store.agekit import AgeKey, age_key
from tests.store.sinkdata import ctx, products
from webtrawl.formats.agekey import recipients
from webtrawl.messages import Lease, Page
from webtrawl.store import JsonlWriter, WarcWriter, seal_open_files
from webtrawl.store.batchlog import rollback
from webtrawl.store.outfile import MAX_PARTS
from webtrawl.store.registry import open_sink

pytest.importorskip("pyrage", reason="the encrypt extra encrypts outputs")


@pytest.fixture(scope="module")
def key(tmp_path_factory: pytest.TempPathFactory) -> AgeKey:
    return age_key(tmp_path_factory.mktemp("age"))


def _rows(n: int, start: int = 0) -> list[dict[str, Any]]:
    return [{"url": f"http://a.test/{i}", "n": i, "text": "caf\u00e9 " * (i % 7)} for i in range(start, start + n)]


def _page(n: int) -> Page:
    return Page(
        lease=Lease(token=f"t.{n}", shard=0, host="a.test", url=f"http://a.test/{n}"),
        status=200,
        reason="OK",
        http_version="1.1",
        headers=[("Content-Type", "text/html")],
        body=b"<html><title>%d</title>%s</html>" % (n, bytes(range(256)) * n),
        request_headers=[("Host", "a.test")],
        fetch_time=1_700_000_000.5 + n,
    )


def _decrypted(key: AgeKey, directory: Path, pattern: str) -> list[bytes]:
    return [key.decrypt(path) for path in sorted(directory.glob(pattern))]


def _write_batches(writer: JsonlWriter, batches: list[list[dict[str, Any]]]) -> None:
    for rows in batches:
        while rows:
            rows = rows[writer.write_some(rows) :]


def _lines(chunks: list[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for chunk in chunks for line in chunk.splitlines()]


def test_encrypted_jsonl_chunks_decrypt_to_the_plain_chunks(tmp_path: Path, key: AgeKey) -> None:
    batches = [_rows(9, b * 9) for b in range(7)]
    plain = JsonlWriter(tmp_path / "plain", "n-p0", 25)
    secret = JsonlWriter(tmp_path / "secret", "n-p0", 25, recipients([key.recipient]))
    for writer in (plain, secret):
        _write_batches(writer, [list(rows) for rows in batches])
        writer.close()
    plain_files = sorted((tmp_path / "plain").iterdir())
    assert sorted(p.name for p in (tmp_path / "secret").iterdir()) == [p.name + ".age" for p in plain_files]
    assert _decrypted(key, tmp_path / "secret", "*") == [p.read_bytes() for p in plain_files]
    assert b"a.test" not in b"".join(p.read_bytes() for p in (tmp_path / "secret").iterdir())


def _warc_records(data: bytes) -> list[tuple[str, str | None, bytes]]:
    return [
        (r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
        for r in ArchiveIterator(io.BytesIO(data), check_digests="raise")
    ]


def test_encrypted_warcs_decrypt_to_warcs_with_the_plain_records(tmp_path: Path, key: AgeKey) -> None:
    plain = WarcWriter(tmp_path / "plain", "n-p0", 3000)
    secret = WarcWriter(tmp_path / "secret", "n-p0", 3000, recipients([key.recipient]))
    for writer in (plain, secret):
        for n in range(12):
            writer.write_pair(_page(n))
        writer.close()
    plain_files = sorted((tmp_path / "plain").iterdir())
    secret_files = sorted((tmp_path / "secret").iterdir())
    assert len(plain_files) > 2 and len(secret_files) > 2, "rotated"
    assert all(p.name.endswith(".warc.gz.age") for p in secret_files)
    # The same records (a file's size varies with its record ids, so the two may rotate at another page).
    decrypted = [record for d in _decrypted(key, tmp_path / "secret", "*") for record in _warc_records(d)]
    assert [r for r in decrypted if r[0] != "warcinfo"] == [
        r for p in plain_files for r in _warc_records(p.read_bytes()) if r[0] != "warcinfo"
    ]
    assert sum(r[0] == "warcinfo" for r in decrypted) == len(secret_files), "each file starts with its warcinfo"


def test_a_killed_writer_loses_nothing_and_its_appends_decrypt(tmp_path: Path, key: AgeKey) -> None:
    keys = recipients([key.recipient])
    batches = [_rows(4, b * 4) for b in range(3)]
    killed = JsonlWriter(tmp_path, "n-p0", 1000, keys)
    _write_batches(killed, [list(rows) for rows in batches])
    journal = tmp_path / "n-p0-00000.jsonl.age.open"
    assert [p.name for p in tmp_path.iterdir()] == [journal.name]
    assert b"a.test" not in journal.read_bytes(), "no plaintext on disk"
    with journal.open("ab") as fh:  # killed inside the next append's write
        fh.write(bytes.fromhex("0000000000000400") + b"age-encryption.org/v1\n-> X25519 torn")
    # The writer is gone (kill -9: nothing of it runs again); its successor's start-up seals what it left.
    sealed = seal_open_files(tmp_path, "n-p0")
    assert [p.name for p in sealed] == [f"n-p0-00000-0000{k}.jsonl.age" for k in range(3)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [p.name for p in sealed], "the journal is gone"
    after = JsonlWriter(tmp_path, "n-p0", 1000, keys)
    _write_batches(after, [_rows(2, 100)])
    after.close()
    files = sorted(tmp_path.iterdir())
    assert files[-1].name == "n-p0-00001.jsonl.age", "the next file follows the recovered ones"
    assert _lines([key.decrypt(p) for p in files]) == [*(row for rows in batches for row in rows), *_rows(2, 100)]


def test_a_file_sealed_before_the_kill_is_not_doubled_by_its_journal(tmp_path: Path, key: AgeKey) -> None:
    writer = JsonlWriter(tmp_path, "n-p0", 1000, recipients([key.recipient]))
    _write_batches(writer, [_rows(3), _rows(3, 3)])
    left = {p: p.read_bytes() for p in tmp_path.glob("*.open")}
    assert len(left) == 1
    writer.close()
    for path, data in left.items():  # killed after the sealed file was renamed, before its journal was removed
        path.write_bytes(data)
    assert seal_open_files(tmp_path, "n-p0") == []
    assert [p.name for p in tmp_path.iterdir()] == ["n-p0-00000.jsonl.age"]
    assert _lines([key.decrypt(tmp_path / "n-p0-00000.jsonl.age")]) == _rows(6)


def test_an_open_encrypted_file_is_sealed_at_its_append_limit(tmp_path: Path, key: AgeKey) -> None:
    writer = JsonlWriter(tmp_path, "n-p0", 1_000_000, recipients([key.recipient]))
    _write_batches(writer, [_rows(1, n) for n in range(MAX_PARTS + 1)])
    assert (tmp_path / "n-p0-00000.jsonl.age").is_file()
    assert [p.name for p in tmp_path.glob("*.open")] == ["n-p0-00001.jsonl.age.open"], "the next file, one append"
    writer.close()
    assert _lines(_decrypted(key, tmp_path, "*.age")) == _rows(MAX_PARTS + 1)


def test_csv_and_jsonl_sinks_encrypt(tmp_path: Path, key: AgeKey) -> None:
    batches = [[products(f"http://a.test/{n}", 3)] for n in range(4)]
    for encrypt_to in ((), (key.recipient,)):
        context = msgspec.structs.replace(ctx(tmp_path, chunk=5), encrypt_to=encrypt_to)
        tag = "secret" if encrypt_to else "plain"
        for url in (f"csv:{tmp_path / tag / 'csv'}", f"jsonl:{tmp_path / tag / 'jsonl'}"):
            sink = open_sink(url, "items", context)
            for batch in batches:
                sink.write(batch)
                sink.flush()
            sink.close()
    for kind in ("csv", "jsonl"):
        plain = sorted((tmp_path / "plain" / kind).iterdir())
        secret = sorted((tmp_path / "secret" / kind).iterdir())
        assert len(plain) > 1 and [p.name + ".age" for p in plain] == [p.name for p in secret]
        assert [key.decrypt(p) for p in secret] == [p.read_bytes() for p in plain]


def test_a_seal_the_full_disk_refuses_is_done_by_the_next_write_with_each_row_once(
    tiny_disk: Path, key: AgeKey
) -> None:
    writer = JsonlWriter(tiny_disk / "records", "n-p0", 3, recipients([key.recipient]))
    rows = [{"url": f"http://a.test/{n}", "pad": random.Random(n).randbytes(60_000).hex()} for n in range(4)]
    _write_batches(writer, [rows[:1], rows[1:2]])
    filler = fill(tiny_disk)
    os.truncate(filler, filler.stat().st_size - 200_000)  # room for the third row, not for the sealed copy of three
    assert writer.write_some(rows[2:3]) == 1, "the row is written even though its file could not be sealed"
    assert [p.name for p in (tiny_disk / "records").iterdir()] == ["n-p0-00000.jsonl.age.open"]
    with pytest.raises(OSError) as info:  # the next write seals first: still no room, and nothing of it is written
        writer.write_some(rows[3:])
    assert info.value.errno == errno.ENOSPC
    filler.unlink()
    assert writer.write_some(rows[3:]) == 1
    writer.close()
    files = sorted((tiny_disk / "records").iterdir())
    assert [p.name for p in files] == ["n-p0-00000.jsonl.age", "n-p0-00001.jsonl.age"]
    assert _lines([key.decrypt(p) for p in files]) == rows


def test_a_rollback_cuts_an_encrypted_file_back_to_its_mark(tmp_path: Path, key: AgeKey) -> None:
    """The batch log's rollback on an encrypted file: its journal is cut back to the mark, the file opened since is
    removed, and what is left decrypts to the rows before the mark."""
    writer = JsonlWriter(tmp_path, "n-p0", 3, recipients([key.recipient]))
    writer.series.hold = True
    _write_batches(writer, [_rows(2)])
    mark = writer.series.mark()
    _write_batches(writer, [_rows(3, start=2)])  # fills the first file (held, not sealed) and opens a second
    assert len(list(tmp_path.glob("*.age.open"))) == 2
    rollback([mark])  # the process was killed: nothing closes the writer
    seal_open_files(tmp_path)
    assert _lines(_decrypted(key, tmp_path, "*.age")) == _rows(2)
