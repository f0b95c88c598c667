"""Recrawl (``--recrawl-after``): each fetched page's state in the recrawl set, and what its next fetch means.

A page fetched with 200 enters the recrawl set with its validators (ETag, Last-Modified), the digest of its payload
and an interval. A later round (``trawl crawl --out DIR --recrawl-after D`` on the same crawl; ``due.lua`` queues
the pages whose time has come) fetches it with a conditional GET: a 304, or a 200 whose payload digest did not
change, is stored as a WARC ``revisit`` record instead of the whole response, and its links are not followed
again. The interval adapts: halved when the page changed, doubled when it did not (with --chunks or --changes,
when its main text, items and chunks did not: noise in the bytes is no change), within [D/4, 8 D] (D: the
page's rule's ``recrawl_after``, else ``--recrawl-after``). A page of the set whose fetch failed (a 5xx, a timeout,
a temporary redirect...) stays in it as it was, due again after the same interval: a site down for a round is
watched again when it recovers. A page that is gone (404, 410, a permanent redirect) stays too, without its
validators and at a doubling interval (up to 8 D), so that a page that comes back is fetched whole and is ``new``.

Sitemaps give hints (:func:`sitemap_hint`): a URL's ``changefreq`` is its first interval (within the same bounds),
kept as "~<ms>" in the recrawl set until its first fetch completes; a ``lastmod`` after the last fetch that told
us the page (the copy's own, or a 304 or the same payload since: ``RecrawlState.checked``) queues the URL again at
once (``hint.lua``).

The state (its format: :mod:`webtrawl.formats.recrawl`, shared with the fetcher and the WARC writer) is written by
``complete.lua`` in the same step that completes the URL, so it is durable exactly when the page's records are. Only
URLs of a crawl with ``--recrawl-after`` carry it: the rest of the frontier keeps its bytes per queued URL.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from webtrawl.formats.recrawl import HINT, RecrawlState, decode, payload_digest
from webtrawl.messages import Page, RecrawlHint
from webtrawl.store.base import PageRecord

GONE_STATUSES = (301, 308, 404, 410)  # not found, gone, and moved for good (the target is tracked as itself)
SERVER_NOT_MODIFIED = "server-not-modified"
IDENTICAL_PAYLOAD = "identical-payload-digest"
_MIN_FACTOR, _MAX_FACTOR = 0.25, 8.0
_DAY = 86_400.0
_CHANGEFREQ_S = {
    "always": 0.0, "hourly": 3600.0, "daily": _DAY, "weekly": 7 * _DAY, "monthly": 30 * _DAY,
    "yearly": 365 * _DAY, "never": float("inf"),
}  # fmt: skip


def revisit_kind(page: Page) -> str:
    """Why this fetch of a page in the recrawl set is a revisit: a 304, or the same payload digest; else ""."""
    if not page.recrawl or page.recrawl.startswith(HINT):  # a hint: no conditional GET was sent
        return ""
    if page.status == 304:
        return SERVER_NOT_MODIFIED
    state = decode(page.recrawl)
    if state is not None and page.status == 200 and not page.truncated and state.digest == payload_digest(page.body):
        return IDENTICAL_PAYLOAD
    return ""


def next_state(
    page: Page,
    record: PageRecord,
    base_s: float,
    now: float | None = None,
    same_content: bool = False,
    archived: bool = False,
) -> tuple[str, int]:
    """The state to store for this fetch and when the page is due again (ms, epoch); ("", 0) if it stays out.

    ``same_content``: the page was fetched whole but its main text, items and chunks did not change (--chunks,
    --changes): for its interval it is unchanged, or a page whose bytes change every time (a timestamp, a token)
    would be fetched at D/4 for ever. ``archived``: its response went to the WARC files (with the record id a later
    revisit derives: ``RecrawlState.derived``)."""
    previous = decode(page.recrawl) if page.recrawl else None
    revisit = isinstance(record.revisit, str) and bool(record.revisit)
    now_ms = round((time.time() if now is None else now) * 1000)
    base_ms = max(1, round(base_s * 1000))
    if not (200 <= page.status < 300 or revisit) or record.error:
        if previous is None:
            return "", 0
        if page.status not in GONE_STATUSES:
            return kept_state(page, now)
        # gone: looked at less and less often, without validators, so that a page back is fetched whole (``new``)
        interval = min(round(base_ms * _MAX_FACTOR), previous.interval_ms * 2)
        gone = RecrawlState(
            previous.key,
            previous.depth,
            previous.origin,
            previous.rest,
            interval,
            route=previous.route,
            checked=record.fetch_time,
        )
        return gone.encode(), now_ms + interval
    if previous is None:
        hinted = page.recrawl[1:] if page.recrawl.startswith(HINT) else ""
        interval = _bounded(int(hinted), base_ms) if hinted.isdigit() else base_ms
    elif revisit or same_content:
        interval = min(round(base_ms * _MAX_FACTOR), previous.interval_ms * 2)
    else:
        interval = max(round(base_ms * _MIN_FACTOR), previous.interval_ms // 2)
    headers = {name.lower(): value for name, value in page.headers}
    lease = page.lease
    end = lease.url.find("/", lease.url.find("://") + 3)
    origin, rest = (lease.url[:end], lease.url[end:]) if end > 0 else (lease.url, "")
    state = RecrawlState(
        key=lease.host,
        depth=lease.depth,
        origin=origin,
        rest=rest,
        interval_ms=interval,
        etag=headers.get("etag", previous.etag if previous and revisit else ""),
        last_modified=headers.get("last-modified", previous.last_modified if previous and revisit else ""),
        digest=previous.digest if previous and revisit else payload_digest(page.body),
        date=previous.date if previous and revisit else record.fetch_time,
        route=lease.route,
        checked=record.fetch_time,  # a 304 confirms the copy held as of now: an older lastmod must not bring it back
        simhash=record.simhash if isinstance(record.simhash, str) else previous.simhash if previous and revisit else "",
        # the WARC record's date is the fetch time only if there is one (else each took its own time.time())
        derived=previous.derived if previous and revisit else archived and page.fetch_time > 0,
    )
    return state.encode(), now_ms + interval


def superseded(previous: str, state: str) -> int | None:
    """The simhash a page of the recrawl set was filed under in the near-duplicate index that its new state no longer
    has (its text changed, it is gone): one entry per URL, or a watched site's index grows with each edit."""
    old = decode(previous) if previous else None
    if old is None or not old.simhash:
        return None
    new = decode(state) if state else None
    return int(old.simhash, 16) if new is None or new.simhash != old.simhash else None


def kept_state(page: Page, now: float | None = None) -> tuple[str, int]:
    """A page of the recrawl set this round said nothing about (it failed, or the parser did): its state as it was,
    due again after the same interval; ("", 0) for a page not in the set."""
    previous = decode(page.recrawl) if page.recrawl else None
    if previous is None:
        return "", 0
    return page.recrawl, round((time.time() if now is None else now) * 1000) + previous.interval_ms


def _bounded(interval_ms: float, base_ms: int) -> int:
    return round(min(max(interval_ms, base_ms * _MIN_FACTOR), base_ms * _MAX_FACTOR))


def sitemap_hint(url: str, changefreq: str, lastmod: str, base_s: float) -> RecrawlHint | None:
    """What a sitemap entry tells the recrawl set (``base_s``: the URL's recrawl interval D); None if nothing."""
    freq = _CHANGEFREQ_S.get(changefreq)
    interval = _bounded(freq * 1000, max(1, round(base_s * 1000))) if freq is not None else 0
    modified = iso_time(lastmod) if lastmod else ""
    return RecrawlHint(url, interval, modified) if interval or modified else None


def iso_time(text: str) -> str:
    """A sitemap lastmod (W3C datetime) or a feed's date (RFC 822) as UTC in the form of a record's fetch_time,
    so that the two compare as strings; "" if it is neither. A time without a zone is taken as UTC."""
    text = text.strip()
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):  # OverflowError: a year past a C long
            return ""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        when = when.astimezone(UTC)
    except OverflowError:  # 0001-01-01 east of UTC or 9999-12-31 west of it: no such UTC time (found by fuzzing)
        return ""
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"
