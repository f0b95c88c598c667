"""Reading a WACZ package back as a replay tool does: the CDXJ index, then each record at its offset."""

from __future__ import annotations

import gzip
import io
import json
import zipfile
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator


def index_entries(package: Path) -> list[dict[str, Any]]:
    """The JSON blocks of every line of ``indexes/index.cdx.gz`` (``url``, ``offset``, ``length``, ``filename``)."""
    with zipfile.ZipFile(package) as zf:
        text = gzip.decompress(zf.read("indexes/index.cdx.gz")).decode()
    return [json.loads(line.split(" ", 2)[2]) for line in text.splitlines() if line.strip()]


def records_at_entries(package: Path, entries: list[dict[str, Any]]) -> list[tuple[str, str, bytes]]:
    """(URL, WARC type, content) of the record each entry points at, checked to be a record of the entry's URL;
    the WARCs must be stored uncompressed in the ZIP (a replay tool reads a record by its offset)."""
    found = []
    with zipfile.ZipFile(package) as zf:
        for entry in entries:
            info = zf.getinfo("archive/" + entry["filename"])
            assert info.compress_type == zipfile.ZIP_STORED, info
            with zf.open(info) as fh:
                fh.seek(int(entry["offset"]))
                member = fh.read(int(entry["length"]))
            record = next(iter(ArchiveIterator(io.BytesIO(member))))
            url = record.rec_headers.get_header("WARC-Target-URI")
            assert url == entry["url"], (url, entry)
            found.append((url, record.rec_type, record.content_stream().read()))
    return found


def archived_records(package: Path) -> list[tuple[str, str, bytes]]:
    """(URL, WARC type, content) of every record of every WARC in the package's ``archive/``."""
    found = []
    with zipfile.ZipFile(package) as zf:
        for name in zf.namelist():
            if name.startswith("archive/"):
                for record in ArchiveIterator(io.BytesIO(zf.read(name))):
                    url = record.rec_headers.get_header("WARC-Target-URI")
                    found.append((url, record.rec_type, record.content_stream().read()))
    return found


def package_pages(package: Path) -> set[str]:
    """The URLs ``pages/pages.jsonl`` lists (after its header line)."""
    with zipfile.ZipFile(package) as zf:
        lines = zf.read("pages/pages.jsonl").decode().splitlines()
    assert json.loads(lines[0])["format"] == "json-pages-1.0"
    return {json.loads(line)["url"] for line in lines[1:]}
