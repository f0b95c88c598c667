"""``trawl export --to wacz:FILE.wacz``: a crawl's WARCs packaged as WACZ 1.1, the format replay tools load.

The package is built by py-wacz (the ``wacz`` package of Webrecorder, the format's authors): it writes the CDXJ
index (``indexes/index.cdx.gz`` and its ``index.idx``), stores the WARCs uncompressed in the ZIP under ``archive/``
(a replay tool reads records by offset), and writes ``datapackage.json`` with every file's SHA-256 and
``datapackage-digest.json``. What it cannot know is which captures are pages: a WARC also holds robots.txt,
sitemaps, redirects and a rendered page's scripts and data. The crawl's page records say it, so ``pages/pages.jsonl``
lists each URL the crawl fetched as an HTML page with a 2xx answer (at its first capture, with its title).

A rendered page is in the WARCs as it was captured: its response, every request its scripts made (so the page
replays with them, all indexed) and the DOM after the scripts ran (a ``resource`` record of ``urn:dom:<page URL>``
that refers to the response). That DOM stays out of the index: it is no capture to replay (crawls made before it
had its own URI stored it under the page's URL and time, where it sorts before the response in the CDXJ and a
replay tool would serve the snapshot instead of the page as captured).
A WARC a killed crawl left ``.open`` is packaged up to its last whole record; the crawl's files are not changed.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from webtrawl.errors import InputError, StateError, UserCodeError
from webtrawl.store.agekeys import is_encrypted, open_output, output_files, read_identities, read_output
from webtrawl.store.recovery import AGE, OPEN_SUFFIX, warc_good_length
from webtrawl.store.warc import EXT

log = logging.getLogger("webtrawl.store")

SCHEME = "wacz:"
_HTML = ("text/html", "application/xhtml+xml")
_DECODER = msgspec.json.Decoder()


@dataclass(frozen=True)
class WaczSummary:
    path: Path
    warcs: int
    pages: int


def is_wacz(url: str) -> bool:
    return url.startswith(SCHEME)


def wacz_path(url: str) -> Path:
    """The file a ``wacz:FILE.wacz`` destination names (absolute); one ``trawl: error:`` line if it is not one."""
    target = url[len(SCHEME) :].removeprefix("//")
    if not target.endswith(".wacz"):
        raise InputError(f"{url}: a WACZ destination is wacz:FILE.wacz")
    path = Path(target).expanduser().absolute()
    if not path.parent.is_dir():
        raise InputError(f"{url}: directory {path.parent} does not exist")
    return path


def export_wacz(out: Path, dest: Path, title: str = "", identity: Path | None = None) -> WaczSummary:
    """Package the WARCs of the crawl in ``out`` as ``dest`` (written beside it, renamed when whole); ``identity``:
    the age identity file that decrypts an encrypted crawl (the package itself is plain)."""
    try:
        from wacz.main import main as wacz_main
    except ModuleNotFoundError:
        raise InputError("--to wacz: needs the wacz package: pip install 'webtrawl[wacz]'") from None
    with tempfile.TemporaryDirectory(prefix="wacz-", dir=dest.parent) as tmp:
        work = Path(tmp)
        warcs = _warcs(out, work, identity)
        _write_pages(out, work / "pages.jsonl", identity)
        part = work / dest.name
        args = ["create", "-o", str(part), "--pages", str(work / "pages.jsonl"), "--hash-type", "sha256"]
        args += ["--title", title or f"webtrawl crawl {out.name}", *map(str, warcs)]
        said = io.StringIO()
        with contextlib.redirect_stdout(said), _dom_not_indexed():  # py-wacz reports on stdout; we print a summary
            code = wacz_main(args)
        for line in said.getvalue().splitlines():
            log.debug("wacz: %s", line)
        if code != 0 or not part.is_file():
            raise StateError(f"py-wacz could not package {out}: {said.getvalue().strip()[-500:]}")
        pages = _pages_in(part)
        os.replace(part, dest)
    return WaczSummary(dest, len(warcs), pages)


@contextlib.contextmanager
def _dom_not_indexed() -> Iterator[None]:
    """py-wacz's indexer (the ``WACZIndexer`` its ``create`` builds) without the rendered pages' DOM records."""
    import wacz.main

    base = wacz.main.WACZIndexer

    class _Indexer(base):  # type: ignore[misc, valid-type]
        def filter_record(self, record: Any) -> bool:
            if record.rec_type == "resource" and record.rec_headers.get_header("WARC-Refers-To"):
                return False
            return bool(super().filter_record(record))

    wacz.main.WACZIndexer = _Indexer
    try:
        yield
    finally:
        wacz.main.WACZIndexer = base


def _warcs(out: Path, work: Path, identity: Path | None) -> list[Path]:
    """The crawl's sealed WARCs, the whole records of each one still ``.open`` (copied into ``work``), and the
    encrypted ones (sealed, or the journal of an open one) decrypted into ``work``."""
    directory = out / "warc"
    keys = read_identities(identity) if identity else None
    found = []
    for path in output_files(directory, EXT) if directory.is_dir() else []:
        if is_encrypted(path):
            copy = work / path.name.removesuffix(OPEN_SUFFIX).removesuffix(AGE)
            copy.write_bytes(read_output(path, keys))
        elif path.name.endswith(OPEN_SUFFIX):
            keep = warc_good_length(path)
            if keep == 0:
                continue
            copy = work / path.name.removesuffix(OPEN_SUFFIX)
            with path.open("rb") as src, copy.open("wb") as dst:
                _copy_prefix(src, dst, keep)
        else:
            copy = path
        found.append(copy)
    if not found:
        raise InputError(f"{out} has no WARC files (warc/*.warc.gz) to package")
    return found


def _copy_prefix(src: Any, dst: Any, size: int) -> None:
    while size > 0:
        chunk = src.read(min(size, 1 << 20))
        if not chunk:
            break
        dst.write(chunk)
        size -= len(chunk)


def _pages_in(package: Path) -> int:
    """The pages py-wacz found in the WARCs (it lists only those, and writes no list when there are none)."""
    with zipfile.ZipFile(package) as zf:
        if "pages/pages.jsonl" not in zf.namelist():
            return 0
        return max(0, len(zf.read("pages/pages.jsonl").splitlines()) - 1)


def _write_pages(out: Path, path: Path, identity: Path | None) -> int:
    """The pages list py-wacz matches against the WARCs: each HTML page the crawl fetched whole, once, at its first
    capture (``ts``, its record's ``fetch_time``, the WARC-Date of its response: py-wacz would take the capture it
    meets first in the files, another parser's later one as often as not), never at a revisit met first (a
    recrawl's, which has no ``ts`` and no title)."""
    pages: dict[str, dict[str, str]] = {}
    for record in _records(out, identity):
        url = record.get("url")
        status = record.get("status") or 0
        mime = str(record.get("content_type") or "").split(";")[0].strip().lower()
        if isinstance(url, str) and 200 <= status < 300 and mime in _HTML and _captured_whole(record):
            page = {"url": url, "title": str(record.get("title") or "")}
            when = record.get("fetch_time")
            if isinstance(when, str) and when and not record.get("revisit"):
                page["ts"] = when
            held = pages.get(url)
            if held is None or ("ts" in page and ("ts" not in held or page["ts"] < held["ts"])):
                pages[url] = page
    with path.open("w", encoding="utf-8") as fh:
        fh.write(json.dumps({"format": "json-pages-1.0", "id": "pages", "title": "Pages"}) + "\n")
        for page in pages.values():
            fh.write(json.dumps({k: v for k, v in page.items() if v}) + "\n")
    return len(pages)


def _captured_whole(record: dict[str, Any]) -> bool:
    """No error, or only the user's extraction (or the main text) failed on it: the page is archived all the same."""
    return record.get("error") in (None, "", UserCodeError.reason)


def _records(out: Path, identity: Path | None) -> Iterator[dict[str, Any]]:
    """Every whole line of ``records/`` (a torn last line of an ``.open`` chunk is not one yet)."""
    directory = out / "records"
    if not directory.is_dir():
        raise InputError(f"{out} has no records/ directory: the WACZ pages list comes from the page records")
    for chunk in output_files(directory, ".jsonl"):
        with open_output(chunk, identity) as fh:
            for raw in fh:
                if raw.endswith(b"\n") and raw.strip():
                    yield _DECODER.decode(raw)
