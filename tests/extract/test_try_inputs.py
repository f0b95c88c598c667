"""``trawl try`` on bad input, as a user runs it: a damaged WARC, a broken saved gzip file, a URL that is not
http(s), an option that can have no effect. Each is one short printable ``trawl: error:`` line and a non-zero exit,
never silence, a traceback or lines of warnings; what was fine before the fault is printed."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

_BODY = b"<html><body><h1>Page %d</h1></body></html>"
_RULES = '[[rule]]\nurl = "a.example"\n[rule.fields]\nh1 = "css:h1::text"\n'


def _trawl(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webtrawl", "try", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def _h1s(done: subprocess.CompletedProcess[str]) -> list[object]:
    return [item["h1"] for line in done.stdout.splitlines() for item in json.loads(line)["items"]]


def _error(done: subprocess.CompletedProcess[str]) -> str:
    """The one error line: a non-zero exit, nothing else on stderr, short and printable."""
    assert done.returncode != 0, done.stdout
    (line,) = done.stderr.splitlines()
    assert line.startswith("trawl: error: ") and line.isprintable() and len(line) < 200, done.stderr
    return line


def _record(n: int, length: bytes | None = None, kind: bytes = b"response") -> bytes:
    """A WARC record of an HTML page at http://a.example/N; ``length``: its Content-Length, as written."""
    block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n" + _BODY % n
    head = b"WARC/1.0\r\nWARC-Type: %s\r\nWARC-Record-ID: <urn:uuid:%d>\r\n" % (kind, n)
    head += b"WARC-Target-URI: http://a.example/%d\r\nWARC-Date: 2026-01-01T00:00:00Z\r\n" % n
    head += b"Content-Type: application/http; msgtype=%s\r\n" % kind
    head += b"Content-Length: %s\r\n\r\n" % (str(len(block)).encode() if length is None else length)
    return head + block + b"\r\n\r\n"


def _warc(path: Path, records: list[bytes], gz: bool) -> Path:
    path.write_bytes(b"".join(gzip.compress(r) if gz else r for r in records))
    return path


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize(
    ("second", "message"),
    [
        (_record(1, b"abc"), "its Content-Length is 'abc', not a number of bytes"),
        (_record(1, b"99999"), "it is cut short"),  # more than the file holds: it swallowed the next record unsaid
        (_record(1, b"10"), "its Content-Length does not match its content"),  # warcio: 3 lines of warning
    ],
    ids=["not-a-number", "too-long", "too-short"],
)
def test_a_damaged_warc_record_is_one_error_line_with_its_offset(
    tmp_path: Path, second: bytes, message: str, gz: bool
) -> None:
    """A record whose Content-Length is not a number, too long or too short: the responses before it are
    printed, then one line names the file and where the damaged record starts. It was silence and exit 0, or
    warcio's warnings and an error without the offset, or a page made of the wrong bytes."""
    (tmp_path / "r.toml").write_text(_RULES)
    first = gzip.compress(_record(0)) if gz else _record(0)
    warc = _warc(tmp_path / ("d.warc.gz" if gz else "d.warc"), [_record(0), second, _record(2)], gz)
    done = _trawl("--extract", "r.toml", "--warc", warc.name, cwd=tmp_path)
    assert _h1s(done) == ["Page 0"]
    line = _error(done)
    assert line.startswith(f"trawl: error: {warc.name}: not a readable WARC file: the record at offset {len(first)}: ")
    assert message in line


def test_the_torn_last_record_of_a_warc_being_written_is_skipped(tmp_path: Path) -> None:
    """A running or killed crawl's WARC (``.open``) ends in a half-written record as a rule: its whole records are
    shown and the torn one is left out, as recovery cuts it; it was shown, made of the bytes that had arrived."""
    (tmp_path / "r.toml").write_text(_RULES)
    whole = _warc(tmp_path / "w.warc.gz", [_record(0), _record(1), _record(2)], gz=True).read_bytes()
    (tmp_path / "w.warc.gz.open").write_bytes(whole[:-30])
    done = _trawl("--extract", "r.toml", "--warc", "w.warc.gz.open", cwd=tmp_path)
    assert done.returncode == 0 and _h1s(done) == ["Page 0", "Page 1"], done.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (_record(0)[:150], "the record at offset 0: the file ends inside its headers"),  # was silence, exit 0
        (bytes(range(256)) * 8, "not a WARC file (it does not start with a WARC/1.0 record header)"),  # its bytes
    ],
    ids=["cut-in-headers", "binary"],
)
def test_a_file_that_is_no_warc_is_one_short_error_line(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "x.warc").write_bytes(content)
    line = _error(_trawl("--text", "--warc", "x.warc", cwd=tmp_path))
    assert line.startswith("trawl: error: x.warc: ") and message in line


def test_a_warc_without_responses_is_an_error_line_after_the_other_files(tmp_path: Path) -> None:
    """A WARC of requests only (or an empty file) printed nothing and exited 0, as if its pages had no items."""
    (tmp_path / "r.toml").write_text(_RULES)
    _warc(tmp_path / "requests.warc", [_record(0, kind=b"request")], gz=False)
    (tmp_path / "empty.warc").write_bytes(b"")
    _warc(tmp_path / "ok.warc.gz", [_record(1), _record(2)], gz=True)
    done = _trawl(
        "--extract",
        "r.toml",
        *("--warc", "requests.warc", "--warc", "empty.warc", "--warc", "ok.warc.gz"),
        cwd=tmp_path,
    )
    assert _h1s(done) == ["Page 1", "Page 2"]
    assert _error(done).startswith("trawl: error: no response records in requests.warc, empty.warc")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (gzip.compress(_BODY % 0)[:-20], "it is cut short"),  # was status 200, no text, no error
        (gzip.compress(b"")[:10] + b"\xff" * 8, "broken gzip data"),
    ],
    ids=["cut", "broken"],
)
def test_a_broken_saved_gzip_file_is_one_error_line(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "page.html.gz").write_bytes(content)
    line = _error(_trawl("--text", "page.html.gz", cwd=tmp_path))
    assert line.startswith("trawl: error: page.html.gz: not a whole gzip file: ") and message in line


def test_a_saved_gzip_file_of_several_members_or_with_bytes_after_it_is_read(tmp_path: Path) -> None:
    (tmp_path / "r.toml").write_text(_RULES)
    (tmp_path / "two.html.gz").write_bytes(gzip.compress(b"<html><body><h1>Pa") + gzip.compress(b"ge 0</h1>"))
    (tmp_path / "tail.html.gz").write_bytes(gzip.compress(_BODY % 1) + b"\n")
    done = _trawl("--extract", "r.toml", "--url", "http://a.example/", "two.html.gz", "tail.html.gz", cwd=tmp_path)
    assert done.returncode == 0 and _h1s(done) == ["Page 0", "Page 1"], done.stderr


def test_try_cuts_a_saved_file_at_max_body(tmp_path: Path) -> None:
    """A saved file was read whole (a huge file, or /dev/zero, all in memory) where a fetch and a WARC record are
    cut at --max-body: the part past the cap is not parsed, as in the crawl."""
    (tmp_path / "r.toml").write_text(
        '[[rule]]\nurl = "a.example"\n[rule.fields]\nh1 = "css:h1::text"\nh2 = "css:h2::text"\n'
    )
    (tmp_path / "big.html").write_bytes(b"<h1>Head</h1>" + b" " * (2 << 20) + b"<h2>Tail</h2>")
    args = ("--extract", "r.toml", "--max-body", "65536", "--url", "http://a.example/", "big.html")
    (line,) = (json.loads(line) for line in _trawl(*args, cwd=tmp_path).stdout.splitlines())
    assert line["items"] == [{"h1": "Head", "h2": None}], line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ftp://x/",), "ftp://x/: not an http(s) URL"),  # was "cannot read ftp:/x"
        (("file:///etc/hostname",), "file:///etc/hostname: not an http(s) URL"),
        (("--url", "nope", "page.html"), "--url: not an http(s) URL: 'nope'"),  # was taken as the page's URL
        (("--url", "ftp://x/", "page.html"), "--url: not an http(s) URL: 'ftp://x/'"),
        (("--identity", "key.txt", "page.html"), "--identity decrypts an encrypted --warc FILE"),  # was ignored
    ],
)
def test_an_input_or_option_that_cannot_work_is_one_error_line(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    (tmp_path / "page.html").write_text("<h1>Page</h1>")
    done = _trawl("--text", *args, cwd=tmp_path)
    assert _error(done).startswith(f"trawl: error: {message}") and done.stdout == ""
