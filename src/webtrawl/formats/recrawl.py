"""The recrawl state of a URL in the recrawl set (``--recrawl-after``): one string, fields joined by newlines (none
of which can hold one), written by ``complete.lua`` in the same step that completes the URL. The parser makes it
(:func:`webtrawl.parse.recrawl.next_state`), the fetcher turns it into a conditional GET
(:func:`conditional_headers`) and the WARC writer takes a revisit record's reference from it (:func:`decode`).

A value starting with ``~`` (:data:`HINT`) is a sitemap's hint for a URL not fetched yet, not a state.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import time

import msgspec

from webtrawl.formats.route import frame_route, split_route

HINT = "~"  # a recrawl-set value starting with it is a sitemap hint, not a state (no queue key starts so)


class RecrawlState(msgspec.Struct):
    key: str  # the frontier's queue key (host or registered domain)
    depth: int
    origin: str
    rest: str
    interval_ms: int
    etag: str = ""
    last_modified: str = ""
    digest: str = ""  # WARC-Payload-Digest of the last full fetch (sha1 of the body as received, base32)
    date: str = ""  # its fetch time (the record's ``fetch_time``, its response's WARC-Date): WARC-Refers-To-Date
    route: str = ""  # a spider's route (Lease.route): kept after the depth, as in a queue entry (frontier/keys.py)
    # the last fetch that told us the page (a full fetch, a 304 or the same payload, a 404): a sitemap lastmod
    # before it says nothing new (hint.lua reads it as the last field); "" is ``date``. Absent in older crawls' states
    checked: str = ""
    # --near-duplicates: the simhash (hex) the page is filed under in the index, taken out when the page changes
    simhash: str = ""
    # the response at ``date`` has the WARC-Record-ID store/warc.py derives from the crawl, URL and date, so a revisit
    # names it (WARC-Refers-To); False for a state written before (its response's id was random) or for a page not
    # archived. Stored as the form of ``date`` (its 17 digits, not the ISO text): no byte per URL, 7 fewer
    derived: bool = False

    def encode(self) -> str:
        depth = f"{self.depth}{frame_route(self.route)}" if self.route else str(self.depth)
        fields = (self.key, depth, self.origin, self.rest, self.interval_ms)
        date = _digits(self.date) if self.derived else self.date
        texts = (self.etag, self.last_modified, self.digest, date, self.simhash, self.checked or self.date)
        return "\n".join([*map(str, fields), *(_one_line(t) for t in texts)])


def stamp(ts: float) -> str:
    """The time ``ts`` (epoch seconds) as 17 digits, ``YYYYMMDDhhmmssSSS`` (UTC): the crawl's stamp in its WARC file
    names (IIPC's and Heritrix's timestamp), the form of a derived response's date in a state."""
    return _digits(warc_date(ts))


def _digits(date: str) -> str:
    """``2026-12-06T23:14:33.123Z`` as ``20261206231433123``; a date of another form as it is (then not derived)."""
    digits = date.translate(_DATE_MARKS)
    return digits if len(digits) == _DATE_DIGITS and _iso(digits) == date else date


def _iso(d: str) -> str:
    return f"{d[:4]}-{d[4:6]}-{d[6:8]}T{d[8:10]}:{d[10:12]}:{d[12:14]}.{d[14:]}Z"


_DATE_MARKS = str.maketrans("", "", "-T:.Z")
_DATE_DIGITS = 17


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


def decode(text: str) -> RecrawlState | None:
    """The state stored for a URL; None for a sitemap hint or anything else."""
    parts = text.split("\n")
    if len(parts) == 9:  # written before ``simhash`` and ``checked``
        parts += ["", parts[8]]
    if len(parts) != 11 or not parts[4].isdigit():
        return None
    key, depth_route, origin, rest, interval, etag, modified, digest, date, simhash, checked = parts
    digits = len(depth_route) - len(depth_route.lstrip("0123456789"))
    route, left = split_route(depth_route[digits:])
    if not digits or left:
        return None
    depth = int(depth_route[:digits])
    derived = len(date) == _DATE_DIGITS and date.isdigit()
    if derived:
        date = _iso(date)
    fields = (etag, modified, digest, date, route, checked, simhash, derived)
    return RecrawlState(key, depth, origin, rest, int(interval), *fields)


def conditional_headers(text: str) -> dict[str, str]:
    """If-None-Match / If-Modified-Since for a URL's stored state (none for a URL not in the recrawl set)."""
    state = decode(text) if text else None
    if state is None:
        return {}
    headers = {}
    if state.etag:
        headers["If-None-Match"] = state.etag
    if state.last_modified:
        headers["If-Modified-Since"] = state.last_modified
    return headers


def payload_digest(body: bytes) -> str:
    """The WARC-Payload-Digest of a response body as received (what the response record carries)."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def warc_date(ts: float) -> str:
    """The WARC-Date of the records of a fetch started at ``ts`` (epoch seconds), to the millisecond: also the page
    record's ``fetch_time``, which the recrawl state keeps (``date``) for the revisit records that refer to the
    response. WARC 1.1's WARC-Refers-To-Date is the WARC-Date of the record referred to, so the two must match."""
    return _utc_second(int(ts)) + f".{int(ts * 1000) % 1000:03d}Z"


@functools.lru_cache(maxsize=8)
def _utc_second(second: int) -> str:
    """The pages of a batch were fetched within a few seconds: ``strftime`` once per second, not per page."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
