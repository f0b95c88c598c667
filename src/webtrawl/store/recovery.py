"""The life cycle of an output file: ``<prefix>-<seq>.<ext>.open`` while written, renamed when whole.

A name without ``.open`` is a promise that the file is complete and will not change, so downstream tools can
pick it up at once. A process killed mid-write leaves an ``.open`` file whose tail may be a half record;
:func:`seal_open_files` (run at start-up, before any writer opens) cuts that tail and keeps every whole
record.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import re
import struct
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
from warcio.archiveiterator import ArchiveIterator

from webtrawl.errors import StateError

log = logging.getLogger("webtrawl.store")

OPEN_SUFFIX = ".open"
AGE = ".age"  # an encrypted file (store/outfile.py): NAME.age sealed, NAME.age.open its journal while open
SEALING = ".sealing"  # a sealed encrypted file being written (renamed when whole)
_STEM = re.compile(r"(?P<stem>.+-\d{5,})(?P<ext>\..+)\Z")
_ENTRY = struct.Struct(">Q")  # a journal entry: its length, then one whole age file
_JSON_DECODER = msgspec.json.Decoder()


def next_sequence(directory: Path, prefix: str, ext: str) -> int:
    """One past the highest sequence number of ``<prefix>-NNNNN<ext>[.open]`` in ``directory`` (0 if none), counting
    encrypted files (``.age``), their journals and the files recovered from them (``<prefix>-NNNNN-KKKKK<ext>.age``)."""
    pattern = re.compile(
        re.escape(prefix)
        + r"-(\d{5,})(?:-\d{5})?"
        + re.escape(ext)
        + r"(?:\.age(?:\.\d{5})?)?(?:\.open)?(?:\.tmp|\.sealing)?\Z"
    )
    highest = -1
    for entry in os.scandir(directory):
        m = pattern.match(entry.name)
        if m:
            highest = max(highest, int(m.group(1)))
    return highest + 1


def file_name(prefix: str, seq: int, ext: str) -> str:
    return f"{prefix}-{seq:05d}{ext}"


def fsync_dir(directory: Path) -> None:
    """Make a rename durable: the directory entry is data too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def finish(open_path: Path) -> Path:
    """Rename an ``.open`` file (already fsynced by its writer) to its final name, without overwriting."""
    return finish_as(open_path, open_path.with_name(open_path.name[: -len(OPEN_SUFFIX)]))


def finish_as(path: Path, final: Path) -> Path:
    """Rename a written, fsynced file to ``final`` (which must not exist) and make the rename durable."""
    if final.exists():
        raise StateError(f"cannot seal {path}: {final.name} already exists")
    os.rename(path, final)
    fsync_dir(path.parent)
    return final


def seal_open_files(directory: Path, prefix: str = "") -> list[Path]:
    """Make every ``*.open`` file in ``directory`` whole (cut after its last complete record) and rename it.

    Only files whose name starts with ``prefix`` (a process's own, when it opens its outputs) if one is given.
    Returns the sealed files; ``.open`` files without a single complete record are removed.
    """
    if not directory.is_dir():
        return []
    sealed = recover_journals(directory, prefix)
    pattern = (glob.escape(prefix + "-") if prefix else "") + "*" + OPEN_SUFFIX  # "n-p1-" must not match n-p10
    for path in sorted(directory.glob(pattern)):
        name = path.name[: -len(OPEN_SUFFIX)]
        if name.endswith(".jsonl"):
            keep = _jsonl_good_length(path)
        elif name.endswith(".warc.gz"):
            keep = warc_good_length(path)
        else:
            continue
        size = path.stat().st_size
        if keep < size:
            log.warning("%s: cut %d bytes of an incomplete record", path.name, size - keep)
        if keep == 0:
            path.unlink()
            continue
        with open(path, "r+b") as fh:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
        sealed.append(finish(path))
    return sealed


def journal_entry(part: bytes) -> bytes:
    """One whole age file as an entry of an encrypted file's journal."""
    return _ENTRY.pack(len(part)) + part


def journal_parts(data: bytes) -> list[bytes]:
    """The whole entries of a journal (a torn last one, a kill inside its write, is left out)."""
    parts, at = [], 0
    while at + _ENTRY.size <= len(data):
        (size,) = _ENTRY.unpack_from(data, at)
        if at + _ENTRY.size + size > len(data):
            break
        parts.append(data[at + _ENTRY.size : at + _ENTRY.size + size])
        at += _ENTRY.size + size
    return parts


def _write_all(fd: int, data: bytes | memoryview) -> None:
    done = 0
    while done < len(data):  # a regular file takes it in one call unless the disk is full
        done += os.write(fd, data[done:] if done else data)


def append_whole(fd: int, data: bytes | memoryview, size: int) -> int:
    """Append ``data`` to the file open on ``fd``, ``size`` bytes long, all or nothing: a write cut short (a full
    disk) is cut back to ``size`` and raised, so no half record is left in front of the next one and the same data
    can be written again. Returns the new size."""
    try:
        _write_all(fd, data)
    except BaseException:
        os.ftruncate(fd, size)
        raise
    return size + len(data)


def write_whole(path: Path, data: bytes) -> None:
    """``data`` as the new file ``path``, fsynced (the caller renames it to its final name when whole); nothing of
    it is left if that fails (a full disk)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def recover_journals(directory: Path, prefix: str = "", *, start: str | None = None) -> list[Path]:
    """Seal what encrypted writers (store/outfile.py) killed in ``directory`` left (``prefix``: only that process's
    files): the journal of a file sealed whole is removed; each whole entry of any other journal becomes a sealed
    file of its own (``<prefix>-NNNNN-KKKKK<ext>.age``, an age file); a sealed file half written is removed."""
    if start is None:  # else: the files whose names start with ``start`` (several processes' of one node)
        start = glob.escape(prefix + "-") if prefix else ""
    for left in directory.glob(f"{start}*{AGE}{SEALING}"):
        left.unlink(missing_ok=True)
    sealed: list[Path] = []
    for journal in sorted(directory.glob(f"{start}*{AGE}{OPEN_SUFFIX}")):
        final = journal.with_name(journal.name.removesuffix(OPEN_SUFFIX))
        stem = _STEM.match(final.name.removesuffix(AGE))
        if stem is None:
            continue
        if not final.exists():  # else: sealed whole, killed before its journal was removed
            for k, part in enumerate(journal_parts(journal.read_bytes())):
                own = directory / f"{stem['stem']}-{k:05d}{stem['ext']}{AGE}"
                if not own.exists():  # a recovery killed halfway wrote it already
                    sealing = own.with_name(own.name + SEALING)
                    write_whole(sealing, part)
                    sealed.append(finish_as(sealing, own))
        journal.unlink()
        fsync_dir(directory)
    if sealed:
        log.warning(
            "%s: %d appends of encrypted files a killed writer left, sealed each on its own", directory, len(sealed)
        )
    return sealed


def _jsonl_good_length(path: Path) -> int:
    """Bytes up to the end of the last complete, valid JSON line (with all lines before it valid too)."""
    data = path.read_bytes()
    good = 0
    while True:
        end = data.find(b"\n", good)
        if end < 0:
            return good
        try:
            _JSON_DECODER.decode(data[good:end])
        except msgspec.DecodeError:
            return good
        good = end + 1


def warc_good_length(path: Path) -> int:
    """End offset of the last WARC record that warcio reads whole and whose gzip member is complete."""
    ends: list[tuple[int, int]] = []  # (member start, member end) of each record read whole
    with open(path, "rb") as fh:
        try:
            it = ArchiveIterator(fh, no_record_parse=True)  # raw_stream = the whole block
            for record in it:
                expected = int(record.rec_headers.get_header("Content-Length") or -1)
                got = _drain(record.raw_stream)
                if expected >= 0 and got < expected:
                    break
                it.read_to_end(record)
                start = it.get_record_offset()
                ends.append((start, start + it.get_record_length()))
        except Exception as exc:  # a torn record can fail in zlib, in warcio's parser or as EOF
            log.info("%s: stopped at a damaged record: %s", path.name, exc)
        # warcio tolerates a member cut inside its 8-byte gzip trailer; we do not, so check the last one.
        while ends and not _member_complete(fh, *ends[-1]):
            ends.pop()
    return ends[-1][1] if ends else 0


def _drain(stream: Any) -> int:
    total = 0
    while chunk := stream.read(65536):
        total += len(chunk)
    return total


def _member_complete(fh: BinaryIO, start: int, end: int) -> bool:
    fh.seek(start)
    data = fh.read(end - start)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with contextlib.suppress(zlib.error):
        while data and not d.eof:
            d.decompress(data, 1 << 20)
            data = d.unconsumed_tail
        return bool(d.eof and not d.unused_data.strip(b"\0\r\n"))
    return False
