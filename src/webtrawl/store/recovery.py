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
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
from warcio.archiveiterator import ArchiveIterator

from webtrawl.errors import StateError

log = logging.getLogger("webtrawl.store")

OPEN_SUFFIX = ".open"
AGE = ".age"  # an encrypted file (store/outfile.py): NAME.age sealed, NAME.age.NNNNN.open its parts while open
TMP = ".tmp"  # a part being written (renamed when whole)
SEALING = ".sealing"  # a sealed encrypted file being written (renamed when whole)
_PART = re.compile(r"(?P<final>.+\.age)\.(?P<k>\d{5})\.open\Z")
_STEM = re.compile(r"(?P<stem>.+-\d{5,})(?P<ext>\..+)\Z")
_JSON_DECODER = msgspec.json.Decoder()


def next_sequence(directory: Path, prefix: str, ext: str) -> int:
    """One past the highest sequence number of ``<prefix>-NNNNN<ext>[.open]`` in ``directory`` (0 if none), counting
    encrypted files (``.age``), their parts and the files recovered from parts (``<prefix>-NNNNN-KKKKK<ext>.age``)."""
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
    sealed = recover_parts(directory, prefix)
    pattern = (glob.escape(prefix + "-") if prefix else "") + "*" + OPEN_SUFFIX  # "n-p1-" must not match n-p10
    for path in sorted(directory.glob(pattern)):
        name = path.name[: -len(OPEN_SUFFIX)]
        if _PART.match(path.name):
            continue  # an encrypted file's part that recover_parts could not name: left as it is
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


def recover_parts(directory: Path, prefix: str = "") -> list[Path]:
    """Seal what encrypted writers (store/outfile.py) killed in ``directory`` left (``prefix``: only that process's
    files): the parts of a file that was sealed whole are removed, the others become sealed files of their own
    (``<prefix>-NNNNN-KKKKK<ext>.age``, each a whole age file); files never written whole are removed."""
    start = glob.escape(prefix + "-") if prefix else ""
    for left in [*directory.glob(f"{start}*{AGE}*{TMP}"), *directory.glob(f"{start}*{AGE}{SEALING}")]:
        left.unlink(missing_ok=True)
    sealed = []
    for part in sorted(directory.glob(f"{start}*{AGE}.*{OPEN_SUFFIX}")):
        m = _PART.match(part.name)
        own = part_own_name(part.name)
        if m is None or own is None:
            continue
        if (directory / m["final"]).exists():  # sealed whole, killed before its parts were removed
            part.unlink()
            continue
        sealed.append(finish_as(part, directory / own))
    if sealed:
        log.warning(
            "%s: %d parts of encrypted files a killed writer left sealed each on its own", directory, len(sealed)
        )
    return sealed


def part_own_name(part: str) -> str | None:
    """The name a part of an encrypted file (``P-00002.EXT.age.00003.open``) gets as a file of its own
    (``P-00002-00003.EXT.age``); None if ``part`` is not one."""
    m = _PART.match(part)
    stem = _STEM.match(m["final"][: -len(AGE)]) if m else None
    if m is None or stem is None:
        return None
    return f"{stem['stem']}-{m['k']}{stem['ext']}{AGE}"


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
