"""``trawl try --warc``: the response records of a WARC file as pages, and one ``trawl: error:`` line (naming the
file and the record's offset) for a file that is not a WARC or has a damaged record.

warcio reads on past damage: a record whose ``Content-Length`` is not a number is taken as empty and the rest of
it as the next record, one that says more bytes than the file holds ends the file without a word, a record cut in
its headers ends the iteration, and a length that is too short only writes a warning on stderr. Each record is
checked here instead, before it is shown: the responses before a damaged record are printed, the damage stops it.
A WARC still being written (``.open``) ends in a torn record as a rule: that tail is skipped without a word.
"""

from __future__ import annotations

import io
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from webtrawl.errors import InputError
from webtrawl.messages import Lease, Page

_LENGTH_RE = re.compile(r"[0-9]+")  # int() would take "+8", " 8" and "8_4"
_SHOWN = 80  # characters of a damaged record's text quoted in the error line


def warc_pages(path: Path, identity: Path | None, max_body: int) -> Generator[tuple[str, Page], None, bool]:
    """The response records of a WARC file as pages, each body cut at ``max_body`` as a fetch would cut it: a
    record is gzip-compressed in the file, so a few KB of file can hold gigabytes of body. Returns whether the file
    had any response record."""
    from webtrawl.store.agekeys import open_output

    try:
        stream = open_output(path, identity)  # an encrypted WARC (--encrypt-to) decrypted in memory
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    responses = 0
    with stream:
        try:
            for page in _responses(stream, max_body, path):
                responses += 1
                yield f"{path}#{page.lease.url}", page
        except _Damage as damage:
            if not _torn_tail(path, damage.offset):
                raise InputError(damage.message(path)) from None
    return responses > 0


class _Damage(Exception):
    def __init__(self, offset: int, why: str) -> None:
        super().__init__(why)
        self.offset, self.why = offset, why

    def message(self, path: Path) -> str:
        if self.offset == 0 and self.why.startswith("Unknown archive format"):
            return f"{path}: not a WARC file (it does not start with a WARC/1.0 record header)"
        return f"{path}: not a readable WARC file: the record at offset {self.offset}: {self.why}"


def _responses(stream: BinaryIO, max_body: int, path: Path) -> Iterator[Page]:
    """The response records of ``stream`` as pages; :class:`_Damage` at the first damaged record."""
    from warcio.archiveiterator import ArchiveIterator

    records = ArchiveIterator(stream)
    records.INC_RECORD = ""  # warcio's stderr warning on a wrong Content-Length: one error line below instead
    offset = 0
    try:
        for record in records:
            offset = records.offset  # where this record starts (in the compressed file for a .warc.gz)
            if record.format != "warc":
                raise InputError(f"{path}: an ARC file, not a WARC: trawl try reads WARC files")
            length = record.rec_headers.get_header("Content-Length")
            if length is None or not _LENGTH_RE.fullmatch(length):
                shown = "none" if length is None else _printable(repr(length))
                raise _Damage(offset, f"its Content-Length is {shown}, not a number of bytes")
            page = _response(record, max_body) if record.rec_type == "response" else None
            records.read_to_end()  # the rest of the record, and the blank lines that end it
            _check_whole(offset, records, record)
            if page is not None:
                yield page
    except (InputError, _Damage):
        raise
    except Exception as exc:  # warcio raises plain exceptions (and trips on missing headers) on a damaged file
        raise _Damage(offset if records.member_info is None else records.offset, _reason(exc)) from None
    if records.offset < stream.seek(0, io.SEEK_END):  # warcio stops without a word at a record cut in its headers
        raise _Damage(records.offset, "the file ends inside its headers")


def _torn_tail(path: Path, offset: int) -> bool:
    """Damage from ``offset`` on in a plain WARC still being written (``.open``, a running or killed crawl's) is
    its torn tail: what recovery cuts at the next start (store/recovery.py) and ``trawl export`` skips in its
    files. An encrypted journal holds whole writes only."""
    from webtrawl.store.agekeys import is_encrypted
    from webtrawl.store.recovery import OPEN_SUFFIX, warc_good_length

    if not path.name.endswith(OPEN_SUFFIX) or is_encrypted(path):
        return False
    return offset >= warc_good_length(path)


def _response(record: Any, max_body: int) -> Page | None:
    if record.http_headers is None:
        return None
    url = record.rec_headers.get_header("WARC-Target-URI")
    http = record.http_headers
    headers = [(k, v) for k, v in http.headers if k.lower() != "x-crawler-transfer-encoding"]
    body = record.raw_stream.read(max_body + 1)  # as received: still content-encoded, as parsed
    status = int(http.get_statuscode() or 0)
    return Page(
        lease=try_lease(url), status=status, headers=headers, body=body[:max_body], truncated=len(body) > max_body
    )


def try_lease(url: str) -> Lease:
    """The lease of a page ``trawl try`` reads: of no shard, its host's politeness not kept."""
    return Lease(token="try.0-0", shard=0, host="", url=url)


def _check_whole(offset: int, records: Any, record: Any) -> None:
    """A record read to its end: all the bytes its Content-Length says, then the blank lines that end a record."""
    missing = getattr(record.raw_stream, "limit", 0)  # warcio's LimitReader: what the file did not hold
    if missing:
        length = record.rec_headers.get_header("Content-Length")
        raise _Damage(offset, f"it is cut short: the file ends {missing} bytes before the end its {length} bytes say")
    if records.err_count:
        raise _Damage(offset, "its Content-Length does not match its content (no blank line after it)")


def _reason(exc: Exception) -> str:
    if isinstance(exc, (AttributeError, TypeError, KeyError, IndexError)):  # warcio's own stumble on a bad header
        return "its headers cannot be read"
    text = str(exc).strip().split("\n", 1)[0] or type(exc).__name__
    return _printable(text)


def _printable(text: str) -> str:
    """``text`` as one short printable line: a damaged file's bytes can be anything."""
    shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" if ord(c) < 256 else "?" for c in text)
    return shown if len(shown) <= _SHOWN else shown[: _SHOWN - 3] + "..."
