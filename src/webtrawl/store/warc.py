"""WARC/1.1 output: a request and a response record per fetched page, the payload byte for byte as received.

A page a browser rendered adds the requests its scripts made (request/response pairs, as received) and a ``resource``
record holding its DOM after the scripts ran (``urn:dom:<URL>``, ``WARC-Refers-To`` its response). The robots.txt
answers a fetcher downloaded come with the next page it hands on (``Page.robots``) and are written before it, as
request/response pairs of their own, even when the page itself is not archived.

Request and response records, the hot path, are built here (headers, digests, WARC-Record-IDs: 0.53 instead of 0.61
ms CPU per page with warcio's record building, benchmarks/bench_warc_cost.py); warcio builds the rarer ones
(warcinfo, revisit, resource) and is the reference reader our files must satisfy (tests check every digest with it).
fastwarc 2.0 took 0.25 ms for the response record alone. The two SHA-1 digests need two passes over the payload
(SHA-1 cannot start from another hash's state), but the payload one is the parser's content hash for an identity
body. Records are built in memory and handed to the OS with unbuffered writes, so a failed write (disk full) is cut
back to the last whole record. Each record is its own gzip member (readers can seek to any record, and a torn tail
costs one record) with the level picked per record: a payload that is already gzip/br/zstd is stored (level 0;
recompressing it costs ~0.5 ms per page to save 0.01%), an identity payload gets level 1 (3x faster than level 6,
4.3x instead of 5x smaller).

Compression goes through ISA-L (the ``isal`` package) when it is installed: the same gzip format, 4x less CPU than
zlib at level 1 on the corpus (0.3 instead of 1.2 ms per 174 KB page, and slightly smaller); zlib otherwise.

Every record names its file's warcinfo record (``WARC-Warcinfo-ID``, WARC 1.1 section 5.14, as Heritrix and wget
write it), so a record taken out of its file (a WARC split or merged by a tool, one write of an encrypted file that a
kill turned into a file of its own) still says which crawl and software wrote it. A file's warcinfo record is written
with its first pair, so its id is known before any record that names it.

A page's response record has an id derived from what identifies it (``uuid5`` of the crawl, its WARC-Date and
URL: a URL is leased once at a time, so two of its responses in one crawl differ in date to the millisecond) and
not a random one: a recrawl's revisit record names it (``WARC-Refers-To``) from the URL's recrawl state, which
already holds that date (:class:`~webtrawl.formats.recrawl.RecrawlState` ``derived``), so Redis keeps no id per URL.
Every other record's id is random.

With ``recipients`` (age public keys, ``--encrypt-to``) each file is an age file (:mod:`webtrawl.store.outfile`).

``Transfer-Encoding`` is renamed to ``X-Crawler-Transfer-Encoding``: the body we store has no chunk framing
(aiohttp removed it), and a reader that sees ``chunked`` would try to de-chunk it; renaming keeps the fact. For the
same reason a body cut at the size cap (``WARC-Truncated: length``) has its ``Content-Length`` renamed to
``X-Crawler-Content-Length``: replay tools pass it on (pywb does, for what it does not rewrite: a PDF, an image), and
a browser told 12 MB and sent the 100 KiB stored waits for the rest, then fails the resource.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import msgspec
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from webtrawl import __version__
from webtrawl.deflate import gzip_compressor
from webtrawl.formats import recrawl
from webtrawl.messages import Exchange, Page
from webtrawl.store.series import Series

EXT = ".warc.gz"
# A rendered page's DOM is a resource record of this URI and the page's URL, as Browsertrix names its text and
# screenshots (urn:text:, urn:view:): under the page's own URL and time a replay tool served it instead of the page.
DOM_URN = "urn:dom:"
_RENAMED = {"transfer-encoding": "X-Crawler-Transfer-Encoding"}
_CUT = {**_RENAMED, "content-length": "X-Crawler-Content-Length"}  # a body cut at the cap: see the docstring
_IDENTITY = ("", "identity")


class _AsSent(StatusAndHeaders):  # type: ignore[misc]  # warcio is untyped
    """Header block bytes as on the wire (latin-1), not warcio's ASCII re-encoding of non-ASCII values."""

    def compute_headers_buffer(self, header_filter: Any = None) -> None:
        self.headers_buff = self.to_str(header_filter).encode("latin-1", "replace") + b"\r\n"


class _Member:
    """File-like that turns everything written between two ``flush()`` calls into one gzip member."""

    def __init__(self, out: BinaryIO, level: int) -> None:
        self._out = out
        self._zip = gzip_compressor(level)

    def write(self, data: bytes) -> int:
        self._out.write(self._zip.compress(data))
        return len(data)

    def flush(self) -> None:
        self._out.write(self._zip.flush())


def _clean(headers: list[tuple[str, str]], renamed: Mapping[str, str] = _RENAMED) -> list[tuple[str, str]]:
    """Headers safe to write as one line each; Transfer-Encoding renamed (see module docstring)."""
    out = []
    for name, value in headers:
        name = renamed.get(name.lower(), name)
        if "\r" in value or "\n" in value:
            value = value.replace("\r", " ").replace("\n", " ")
        out.append((name, value))
    return out


def _sha1(digest: bytes) -> str:
    return "sha1:" + base64.b32encode(digest).decode("ascii")


_EMPTY_SHA1 = _sha1(hashlib.sha1(b"").digest())
# A version-4 UUID's fixed bits: version 4 in the 13th hex digit, variant 10 in the 17th (RFC 9562).
_UUID4_CLEAR = ~((0xF << 76) | (0x3 << 62))
_UUID4_SET = (0x4 << 76) | (0x2 << 62)
_UUID5_SET = (0x5 << 76) | (0x2 << 62)  # a name-based (SHA-1) UUID's: the same bits, version 5


def _http_block(first_line: str, headers: list[tuple[str, str]], renamed: Mapping[str, str] = _RENAMED) -> bytes:
    """The HTTP header block as on the wire (latin-1; what ``_AsSent`` gives warcio), blank line included."""
    lines = [first_line, *(f"{name}: {value}" for name, value in _clean(headers, renamed))]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")


def _record(fields: list[tuple[str, str]], block: bytes, payload: bytes, level: int) -> bytes:
    """One request or response record as its own gzip member, built here rather than by warcio: its record
    building (StatusAndHeaders round trips) was ~0.1 ms per pair, a fifth of the sink's CPU (bench_warc_cost)."""
    head = "".join(f"{name}: {value}\r\n" for name, value in fields)
    length = len(block) + len(payload)
    head = f"WARC/1.1\r\n{head}Content-Length: {length}\r\n\r\n"
    z = gzip_compressor(level)
    parts = [z.compress(head.encode("utf-8")), z.compress(block)]
    if payload:
        parts.append(z.compress(payload))
    parts += (z.compress(b"\r\n\r\n"), z.flush())
    return b"".join(parts)


def _urn(raw: bytes, version: int) -> str:
    """16 bytes as a UUID URN of ``version`` (_UUID4_SET or _UUID5_SET), without the UUID object (half the cost)."""
    h = f"{int.from_bytes(raw) & _UUID4_CLEAR | version:032x}"
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>"


def _record_id() -> str:
    """A random (version 4) UUID URN, what ``uuid.uuid4()`` gives."""
    return _urn(os.urandom(16), _UUID4_SET)


def _derived_id(namespace: bytes, url: str, date: str) -> str:
    """``uuid.uuid5(namespace, f"{date} {url}")`` as a record id URN."""
    digest = hashlib.sha1(namespace + f"{date} {url}".encode("utf-8", "surrogatepass")).digest()
    return _urn(digest[:16], _UUID5_SET)


def _crawl_namespace(crawl: str) -> uuid.UUID:
    """The namespace of the page response ids of one crawl (:func:`_derived_id`)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"webtrawl-crawl:{crawl}")


def _request_target(url: str) -> str:
    slash = url.find("/", url.find("://") + 3)
    return url[slash:] if slash >= 0 else "/"


class WarcWriter:
    """Appends request/response pairs to ``<prefix>-<seq:05d>.warc.gz``, rotating at ``max_bytes``."""

    def __init__(
        self,
        directory: Path,
        prefix: str,
        max_bytes: int,
        recipients: Sequence[Any] = (),
        info: Sequence[tuple[str, str]] = (),
        crawl: str = "",
    ) -> None:
        """``info``: more fields of each file's warcinfo record (``http-header-user-agent``, ``robots``, ...); an
        ``isPartOf`` there replaces the file name prefix. ``crawl``: what makes the page response ids of this crawl
        its own (see the module docstring), the same for every writer of the crawl."""
        self.series = Series(directory, prefix, EXT, recipients, max_bytes=max(1, max_bytes))
        self._builder = WARCWriter(io.BytesIO(), gzip=False, warc_version="1.1")
        self._info = dict(info)
        self._info_id = ""  # the WARC-Record-ID of the open file's warcinfo record: every record names it
        self._namespace = _crawl_namespace(crawl).bytes

    @property
    def current_path(self) -> Path | None:
        """The ``.open`` file being written, if any."""
        return self.series.file.path if self.series.file is not None else None

    def write(self, page: Page, record: Mapping[str, Any]) -> None:
        """:meth:`write_pair` with the content hash of ``record`` (a JSON record as a dict), or, for a recrawled
        page that did not change (``record["revisit"]``), the request and a revisit record."""
        revisit = record.get("revisit")
        if revisit:
            self.write_pair(page, revisit=str(revisit))
        else:
            self.write_pair(page, str(record.get("content_hash", "")))

    def write_pair(self, page: Page, content_hash: str = "", revisit: str = "", pair: bool = True) -> None:
        """Write the request and response records of ``page``; both are in the OS when this returns.

        ``content_hash`` is the parser's ``sha1:<hex>`` of the decoded payload (the record's ``content_hash``).
        ``revisit`` (a recrawl profile: server-not-modified, identical-payload-digest) writes a revisit record that
        refers to the page's last full response (digest and date from its recrawl state) instead of a response.
        The robots.txt answers the page carries (``page.robots``) go first, as request/response pairs of their own;
        ``pair=False`` writes only those (a page that is not archived itself: refused, noindex).
        """
        if not pair and not page.robots:
            return
        self.series.rotate()  # a full file first: the warcinfo record goes in the next one
        buf = io.BytesIO()
        if (
            self.series.file is None
        ):  # a file's warcinfo record goes with its first pair: no file (or encrypted write) without a pair
            info = self._warcinfo()
            self._info_id = info.rec_headers.get_header("WARC-Record-ID")
            self._put(buf, info, 6)
        for ex in page.robots:
            self._exchange(buf, page, ex)
        if pair:
            self._page(buf, page, content_hash, revisit)
        self.series.write(buf.getbuffer())  # all or nothing; a new file's first write failed: no file is left

    def _page(self, buf: BinaryIO, page: Page, content_hash: str, revisit: str) -> None:
        """The page's own request and response (or revisit) records, and a rendered page's other records."""
        url = page.lease.url
        date = recrawl.warc_date(page.fetch_time or time.time())
        encoded = any(n.lower() == "content-encoding" and v.strip().lower() not in _IDENTITY for n, v in page.headers)
        # the parser's content hash is SHA-1 of the decoded payload: for an identity body that is the WARC payload
        known = content_hash if not encoded else ""
        if revisit:
            response = self._revisit(page, url, date, revisit)
            response_id = response.rec_headers.get_header("WARC-Record-ID")
            buf.write(self._request(page, url, date, response_id))
            self._put(buf, response, 0)
        else:
            response_id = _derived_id(self._namespace, url, date)
            buf.write(self._request(page, url, date, response_id))
            buf.write(self._response(page, url, date, known, response_id, 0 if encoded else 1))
        if page.dom is not None:
            self._rendered(buf, page, date, response_id)

    def _rendered(self, buf: BinaryIO, page: Page, date: str, page_response_id: str) -> None:
        """A rendered page's other requests (each a request/response pair, as received) and its DOM after the
        scripts ran, as a ``resource`` record of ``urn:dom:<page URL>`` that refers to the page's response."""
        for ex in page.exchanges:
            self._exchange(buf, page, ex)
        dom = page.dom or b""
        resource = self._builder.create_warc_record(
            DOM_URN + page.lease.url,
            "resource",
            payload=io.BytesIO(dom),
            length=len(dom),
            warc_content_type="text/html; charset=utf-8",
            warc_headers_dict={
                "WARC-Date": date,
                "WARC-Refers-To": page_response_id,
                "WARC-Refers-To-Target-URI": page.lease.url,
                "WARC-Refers-To-Date": date,
                "WARC-Concurrent-To": page_response_id,
                "WARC-Warcinfo-ID": self._info_id,
            },
        )
        self._put(buf, resource, 1)

    def _exchange(self, buf: BinaryIO, page: Page, ex: Exchange) -> None:
        """The request/response pair of one more answer fetched for ``page`` (a render's request, a robots.txt)."""
        wire = msgspec.structs.asdict(ex)  # an Exchange is a page's answer fields and its URL
        sub = Page(lease=msgspec.structs.replace(page.lease, url=wire.pop("url")), **wire)
        date = recrawl.warc_date(ex.fetch_time or time.time())
        response_id = _record_id()
        buf.write(self._request(sub, ex.url, date, response_id))
        buf.write(self._response(sub, ex.url, date, "", response_id, 1))

    def flush(self) -> None:
        """Nothing is buffered in this process: every ``write`` already reached the OS."""

    def close(self) -> None:
        self.series.close()

    def _put(self, fh: BinaryIO, rec: Any, level: int) -> None:
        member = _Member(fh, level)
        self._builder.out = member
        self._builder.write_record(rec)  # warcio flushes the member at the end of each record

    def _request(self, page: Page, url: str, date: str, concurrent_to: str) -> bytes:
        block = _http_block(f"GET {_request_target(url)} HTTP/{page.http_version or '1.1'}", page.request_headers)
        fields = [
            ("WARC-Type", "request"),
            ("WARC-Record-ID", _record_id()),
            ("WARC-Target-URI", url),
            ("WARC-Date", date),
            ("WARC-Concurrent-To", concurrent_to),
            ("WARC-Warcinfo-ID", self._info_id),
            ("WARC-Payload-Digest", _EMPTY_SHA1),
            ("WARC-Block-Digest", _sha1(hashlib.sha1(block).digest())),
            ("Content-Type", "application/http; msgtype=request"),
        ]
        return _record(fields, block, b"", 6)

    def _response(self, page: Page, url: str, date: str, payload_sha1: str, record_id: str, level: int) -> bytes:
        """The response record; the payload digest comes free from ``payload_sha1`` (``sha1:<hex>`` of the same
        bytes) if known. The block digest needs its own pass over the payload: SHA-1 cannot start from another
        hash's state, and the block (headers + payload) and the payload begin differently."""
        status = f"{page.status} {page.reason}".strip()
        block = _http_block(f"HTTP/{page.http_version} {status}", page.headers, _CUT if page.truncated else _RENAMED)
        body = page.body
        digest = hashlib.sha1(block)
        digest.update(body)
        if payload_sha1.startswith("sha1:") and len(payload_sha1) == 45:
            payload = bytes.fromhex(payload_sha1[5:])
        else:
            payload = hashlib.sha1(body).digest()
        fields = [
            ("WARC-Type", "response"),
            ("WARC-Record-ID", record_id),
            ("WARC-Target-URI", url),
            ("WARC-Date", date),
            ("WARC-Warcinfo-ID", self._info_id),
            ("WARC-Payload-Digest", _sha1(payload)),
            ("WARC-Block-Digest", _sha1(digest.digest())),
        ]
        if page.ip:
            fields.append(("WARC-IP-Address", page.ip))
        if page.truncated:
            fields.append(("WARC-Truncated", "length"))
        fields.append(("Content-Type", "application/http; msgtype=response"))
        return _record(fields, block, body, level)

    def _revisit(self, page: Page, url: str, date: str, profile: str) -> Any:
        """A revisit record of ``page`` that refers to its last full response. A 304's is header-less: replay tools
        (pywb, ReplayWeb.page) serve a revisit with the HTTP headers it holds and the payload it refers to, so a
        304's headers would replay the page as an empty 304; without them the referred response is served whole.
        The 304 is still in its request (the validators sent) and in the page's record (status 304)."""
        state = recrawl.decode(page.recrawl)
        http = None
        if page.status != 304:
            head = f"{page.status} {page.reason}".strip()
            http = _AsSent(head, _clean(page.headers), protocol=f"HTTP/{page.http_version}")
        warc_headers = {"WARC-Date": date, "WARC-Warcinfo-ID": self._info_id}
        if page.ip:
            warc_headers["WARC-IP-Address"] = page.ip
        if state and state.derived:  # the response has the id derived from its URL and date: named
            warc_headers["WARC-Refers-To"] = _derived_id(self._namespace, url, state.date)
        refers_date = state.date if state and state.date else date
        digest = state.digest if state and state.digest else "sha1:" + base64.b32encode(bytes(20)).decode()
        record = self._builder.create_revisit_record(
            url, digest, url, refers_date, http_headers=http, warc_headers_dict=warc_headers
        )
        record.rec_headers.replace_header("WARC-Profile", f"http://netpreserve.org/warc/1.1/revisit/{profile}")
        return record

    def _warcinfo(self) -> Any:
        return self._builder.create_warcinfo_record(
            self.series.name,
            {
                "software": f"webtrawl/{__version__}",
                "format": "WARC File Format 1.1",
                "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
                "isPartOf": self.series.prefix,
                **self._info,
            },
        )
