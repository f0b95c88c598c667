"""WARC output as warcio reads it back: pairs, headers, exact payload bytes, rotation, resume, torn tails."""

from __future__ import annotations

import base64
import gzip
import hashlib
import random
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from webtrawl.messages import Lease, Page
from webtrawl.store import WarcWriter, seal_open_files


def _page(n: int, body: bytes | None = None, **fields: Any) -> Page:
    url = f"http://site.example/p/{n}?q=a%20b"
    body = gzip.compress(b"<html><title>page %d</title>" % n + bytes(range(256)) * 4, mtime=0) if body is None else body
    defaults: dict[str, Any] = {
        "status": 200,
        "reason": "OK",
        "http_version": "1.1",
        "headers": [
            ("Content-Type", "text/html; charset=utf-8"),
            ("Content-Encoding", "gzip"),
            ("Transfer-Encoding", "chunked"),
            ("Set-Cookie", "a=1"),
            ("Set-Cookie", "b=2"),
            ("X-Latin", "caf\xe9"),
        ],
        "body": body,
        "request_headers": [
            ("Host", "site.example"),
            ("User-Agent", "webtrawl/0.1"),
            ("Accept-Encoding", "gzip"),
        ],
        "ip": "127.0.0.1",
        "fetch_time": 1_700_000_000.5 + n,
        "elapsed_ms": 5.0,
    }
    defaults.update(fields)
    return Page(lease=Lease(token=f"t.{n}", shard=0, host="site.example", url=url), **defaults)


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    with open(path, "rb") as fh:
        for rec in ArchiveIterator(fh):
            out.append(
                {
                    "type": rec.rec_type,
                    "warc": dict(rec.rec_headers.headers),
                    "status": f"{rec.http_headers.protocol} {rec.http_headers.statusline}"
                    if rec.http_headers
                    else None,
                    "http": list(rec.http_headers.headers) if rec.http_headers else [],
                    "raw": rec.raw_stream.read(),
                }
            )
    return out


def test_request_response_pair_reads_back(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path, "n-p0", 1 << 30)
    page = _page(1, truncated=True)
    writer.write(page, {})
    open_file = tmp_path / "n-p0-00000.warc.gz.open"
    assert open_file.exists(), "written as .open until closed"
    writer.close()
    assert not open_file.exists()
    recs = _records(tmp_path / "n-p0-00000.warc.gz")
    assert [r["type"] for r in recs] == ["warcinfo", "request", "response"]
    info, req, resp = recs
    assert info["warc"]["WARC-Type"] == "warcinfo" and b"webtrawl/" in info["raw"]

    assert req["status"] == "GET /p/1?q=a%20b HTTP/1.1"
    assert req["http"] == page.request_headers
    assert resp["status"] == "HTTP/1.1 200 OK"
    for rec in (req, resp):
        assert rec["warc"]["WARC-Target-URI"] == page.lease.url
        assert rec["warc"]["WARC-Date"] == "2023-11-14T22:13:21.500Z"  # the record's fetch_time, to the character
        assert rec["warc"]["WARC-Date"].startswith("2023-11-14T22:13:21")
    assert req["warc"]["WARC-Concurrent-To"] == resp["warc"]["WARC-Record-ID"]
    ids = [rec["warc"]["WARC-Record-ID"] for rec in recs]
    assert len(set(ids)) == 3 and all(i.startswith("<urn:uuid:") and i.endswith(">") for i in ids)
    for i in ids:  # UUIDs written as uuid.uuid4() writes them
        assert str(uuid.UUID(i[10:-1])) == i[10:-1]
    # random (version 4), but the response's: derived from the crawl, its date and URL (test_warc_ids.py)
    assert [uuid.UUID(i[10:-1]).version for i in ids] == [4, 4, 5]
    assert resp["warc"]["WARC-IP-Address"] == "127.0.0.1"
    assert resp["warc"]["WARC-Truncated"] == "length"

    # Headers as received (order, duplicates, latin-1 bytes); the chunking marker renamed so readers do not
    # de-chunk a body that has no chunk framing.
    assert resp["http"] == [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Content-Encoding", "gzip"),
        ("X-Crawler-Transfer-Encoding", "chunked"),
        ("Set-Cookie", "a=1"),
        ("Set-Cookie", "b=2"),
        ("X-Latin", "caf\xe9"),
    ]
    assert resp["raw"] == page.body, "payload stored exactly as received (still gzip)"
    digest = "sha1:" + base64.b32encode(hashlib.sha1(page.body).digest()).decode()
    assert resp["warc"]["WARC-Payload-Digest"] == digest


def test_an_encoded_payload_is_stored_as_it_came(tmp_path: Path) -> None:
    """A gzip-encoded payload cannot shrink: its record keeps it in stored blocks. ISA-L's level 0 (its fastest
    Huffman coding, not zlib's stored level) once made such records a quarter larger than the payload."""
    body = gzip.compress(random.Random(5).randbytes(200_000), mtime=0)
    writer = WarcWriter(tmp_path, "enc", 1 << 30)
    writer.write(_page(3, body=body), {})
    writer.close()
    path = tmp_path / "enc-00000.warc.gz"
    responses = [r for r in _records(path) if r["type"] == "response"]
    assert responses[0]["raw"] == body
    assert path.stat().st_size < len(body) + 4096  # the payload, its framing, the headers and two small records


def test_many_pages_and_content_stream_decoding(tmp_path: Path) -> None:
    with_identity = _page(7, body=b"<html>plain</html>", headers=[("Content-Type", "text/html")])
    writer = WarcWriter(tmp_path, "x", 1 << 30)
    pages = [_page(i) for i in range(5)] + [with_identity]
    for page in pages:
        writer.write(page, {})
    writer.close()
    with open(tmp_path / "x-00000.warc.gz", "rb") as fh:
        responses = [r for r in ArchiveIterator(fh) if r.rec_type == "response" and r.content_stream().read()]
    assert len(responses) == 6
    with open(tmp_path / "x-00000.warc.gz", "rb") as fh:
        bodies = [r.content_stream().read() for r in ArchiveIterator(fh) if r.rec_type == "response"]
    assert bodies[0].startswith(b"<html><title>page 0</title>")  # readers can still undo Content-Encoding
    assert bodies[-1] == b"<html>plain</html>"


def test_rotation_and_each_file_starts_with_warcinfo(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path, "n-p1", 1500)
    for i in range(6):
        writer.write(_page(i), {})
    writer.close()
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == [f"n-p1-{i:05d}.warc.gz" for i in range(len(files))]
    assert len(files) >= 3
    seen = []
    for f in files:
        recs = _records(f)
        assert recs[0]["type"] == "warcinfo"
        seen += [r["warc"]["WARC-Target-URI"] for r in recs if r["type"] == "response"]
    assert seen == [_page(i).lease.url for i in range(6)]


def test_sequence_continues_after_existing_files(tmp_path: Path) -> None:
    (tmp_path / "n-p0-00000.warc.gz").write_bytes(b"")
    (tmp_path / "n-p0-00004.warc.gz").write_bytes(b"")
    (tmp_path / "other-00009.warc.gz").write_bytes(b"")
    writer = WarcWriter(tmp_path, "n-p0", 1 << 30)
    writer.write(_page(1), {})
    writer.close()
    assert (tmp_path / "n-p0-00005.warc.gz").exists()
    assert WarcWriter(tmp_path, "n-p0", 1).current_path is None, "nothing is created before the first write"


def test_close_without_writes_creates_nothing(tmp_path: Path) -> None:
    WarcWriter(tmp_path, "n", 100).close()
    assert list(tmp_path.iterdir()) == []


def _write_and_tear(tmp_path: Path, n: int) -> tuple[Path, int]:
    """n pages in an .open file (as a killed process leaves it); returns path and size before the last."""
    writer = WarcWriter(tmp_path, "k", 1 << 30)
    for i in range(n - 1):
        writer.write(_page(i), {})
    path = writer.current_path
    assert path is not None
    good = path.stat().st_size
    writer.write(_page(n - 1), {})
    return path, good


def test_torn_last_record_is_cut_on_seal(tmp_path: Path) -> None:
    path, good = _write_and_tear(tmp_path, 4)
    full = path.read_bytes()
    # Cut inside the last pair at many points: the sealed file must keep exactly the complete pairs before it.
    step = max(1, (len(full) - good) // 40)
    for cut in [*range(good + 1, len(full), step), len(full) - 1, len(full) - 4]:
        path.write_bytes(full[:cut])
        sealed = seal_open_files(tmp_path)
        final = tmp_path / "k-00000.warc.gz"
        assert sealed == [final]
        kept = _records(final)
        if cut < len(full):
            assert final.stat().st_size in (good, good + _request_member_size(full, good)), cut
        uris = [r["warc"]["WARC-Target-URI"] for r in kept if r["type"] == "response"]
        assert uris == [_page(i).lease.url for i in range(3)], cut
        assert all(r["raw"] == _page(i).body for i, r in enumerate(x for x in kept if x["type"] == "response"))
        final.rename(path)


def _request_member_size(data: bytes, start: int) -> int:
    """Size of the gzip member at ``start`` (the request record of the torn pair)."""
    import zlib

    d = zlib.decompressobj(31)
    d.decompress(data[start:])
    return len(data) - start - len(d.unused_data)


def test_seal_keeps_a_whole_file_and_drops_an_empty_one(tmp_path: Path) -> None:
    path, _ = _write_and_tear(tmp_path, 2)
    size = path.stat().st_size
    (tmp_path / "z-00000.warc.gz.open").write_bytes(b"\x1f\x8b\x08")  # died inside the warcinfo record
    (tmp_path / "unrelated.txt.open").write_bytes(b"left alone")
    sealed = seal_open_files(tmp_path)
    assert sealed == [tmp_path / "k-00000.warc.gz"]
    assert sealed[0].stat().st_size == size
    assert not (tmp_path / "z-00000.warc.gz.open").exists()
    assert (tmp_path / "unrelated.txt.open").exists()
    writer = WarcWriter(tmp_path, "k", 1 << 30)
    writer.write(_page(9), {})
    writer.close()
    assert (tmp_path / "k-00001.warc.gz").exists(), "a resumed writer continues the sequence"


@pytest.mark.parametrize("missing", [True, False])
def test_seal_on_missing_or_clean_directory(tmp_path: Path, missing: bool) -> None:
    target = tmp_path / "nope" if missing else tmp_path
    assert seal_open_files(target) == []


_CHILD = """
import sys
import uuid
from pathlib import Path
from tests.store.test_warc import _page
from webtrawl.store import WarcWriter
w = WarcWriter(Path(sys.argv[1]), "killed", 1 << 30)
i = 0
while True:
    w.write(_page(i, body=bytes(range(256)) * 200), {})
    print(i, flush=True)
    i += 1
"""


def test_records_survive_a_killed_writer(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path)], stdout=subprocess.PIPE, text=True, cwd=root)
    assert child.stdout is not None
    acknowledged = -1
    for line in child.stdout:
        acknowledged = int(line)
        if acknowledged >= 100:
            break
    child.kill()
    child.wait()
    sealed = seal_open_files(tmp_path)
    assert sealed == [tmp_path / "killed-00000.warc.gz"]
    responses = [r for r in _records(sealed[0]) if r["type"] == "response"]
    assert len(responses) > acknowledged, "every write that returned is on disk"
    assert [r["warc"]["WARC-Target-URI"] for r in responses] == [_page(i).lease.url for i in range(len(responses))]
    assert all(r["raw"] == bytes(range(256)) * 200 for r in responses)


def test_digests_verify_with_warcio_check(tmp_path: Path) -> None:
    """Block and payload digests are computed by the writer (the payload one taken from the parser's content
    hash when the body is identity-encoded); ``warcio check`` recomputes both from the stored bytes."""
    identity = _page(1, body=b"<html>plain</html>" * 5000, headers=[("Content-Type", "text/html")])
    encoded = _page(2)  # gzip body: the parser's hash is of the decoded payload, so it must not be reused
    decoded_hash = "sha1:" + hashlib.sha1(gzip.decompress(encoded.body)).hexdigest()
    writer = WarcWriter(tmp_path, "d", 1 << 30)
    writer.write(identity, {"content_hash": "sha1:" + hashlib.sha1(identity.body).hexdigest()})
    writer.write(encoded, {"content_hash": decoded_hash})
    writer.write(_page(3, body=b""), {})
    writer.close()
    path = tmp_path / "d-00000.warc.gz"
    check = subprocess.run([str(Path(sys.executable).parent / "warcio"), "check", "-v", str(path)], capture_output=True)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()
    assert check.stdout.decode().count("digest pass") >= 6, check.stdout.decode()
    responses = [r for r in _records(path) if r["type"] == "response"]
    expected = [hashlib.sha1(p.body).digest() for p in (identity, encoded)]
    got = [base64.b32decode(r["warc"]["WARC-Payload-Digest"][5:]) for r in responses[:2]]
    assert got == expected


def test_a_cut_body_does_not_announce_its_whole_length(tmp_path: Path) -> None:
    """A replay tool passes a record's Content-Length on (pywb does for a PDF or an image): the stored prefix of a body
    cut at the cap must not claim the server's full length, or a browser waits for bytes that never come."""
    writer = WarcWriter(tmp_path, "n-p0", 1 << 30)
    headers = [("Content-Type", "application/pdf"), ("Content-Length", "1000000")]
    writer.write_pair(_page(1, b"%PDF" * 250, headers=headers, truncated=True))
    writer.write_pair(
        _page(2, b"%PDF" * 250, headers=[("Content-Type", "application/pdf"), ("Content-Length", "1000")])
    )
    writer.close()
    cut, whole = [r for r in _records(tmp_path / "n-p0-00000.warc.gz") if r["type"] == "response"]
    assert cut["warc"]["WARC-Truncated"] == "length" and "WARC-Truncated" not in whole["warc"]
    assert ("X-Crawler-Content-Length", "1000000") in cut["http"]  # the fact kept, as for Transfer-Encoding
    assert not [v for k, v in cut["http"] if k.lower() == "content-length"]
    assert ("Content-Length", "1000") in whole["http"]  # a whole body: as the server sent it
    with (tmp_path / "n-p0-00000.warc.gz").open("rb") as fh:
        for rec in ArchiveIterator(fh, check_digests="raise"):
            rec.content_stream().read()
