"""One exception tree for the whole crawler.

Every failure a URL can meet has a short ``reason`` string. The same string is the counter name in Redis
(``err:<reason>`` / ``drop:<reason>``), the ``error`` field of the JSONL record and the row in ``trawl stats``, so a
user can follow one URL's fate through all three without a mapping table.

The four branches separate who is at fault: the network (:class:`TransportError`), the server's answer
(:class:`HttpError`), our own rules (:class:`PolicyError`) and the user's input (:class:`InputError`).
"""

from __future__ import annotations

import errno
import functools
import os
import sysconfig
import traceback
from pathlib import Path

_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def no_room(exc: BaseException | None) -> bool:
    """A write refused for want of space (a full disk, a quota, a file too large): it may go through later."""
    return isinstance(exc, OSError) and exc.errno in _NO_ROOM


class WebtrawlError(Exception):
    """Base of everything webtrawl raises on purpose."""

    reason = "error"


# --- input: the user's flags, files and URLs -------------------------------------------------------------------
class InputError(WebtrawlError):
    """Bad input from the user: shown as one line on stderr, exit status 2."""

    reason = "input"


class ConfigError(InputError, ValueError):
    """A bad option or value (flag, TOML key, ``TRAWL_*`` variable, or a keyword of :class:`webtrawl.Crawler`): a
    ``ValueError`` too, which is what Python code passing a bad argument expects to catch."""

    reason = "config"


class StateError(WebtrawlError):
    """The crawl state (Redis, output dir) cannot be reached or is inconsistent; exit status 3."""

    reason = "state"


class RedisUnavailable(StateError):
    """Redis is out of reach for now (connection lost or refused, a restart, a failover): worth waiting out."""

    reason = "redis-unavailable"


class ChildFailed(WebtrawlError):
    """A fetcher or parser died at start several times in a row, or of an error a restart would repeat (a sink's
    failure): restarting it again would only loop."""

    reason = "child-failed"


# --- transport: the network failed before a full HTTP answer ----------------------------------------------------
class TransportError(WebtrawlError):
    """The request did not produce a complete HTTP response. ``transient`` ones are retried."""

    reason = "transport"
    transient = True


class DnsError(TransportError):
    reason = "dns"
    transient = False


class DnsTimeout(DnsError):
    """No answer from the DNS server (timeout, SERVFAIL): unlike a negative answer, worth another try."""

    reason = "dns-timeout"
    transient = True


class ConnectError(TransportError):
    reason = "connect"


class NoLiveProxy(ConnectError):
    """Every ``--proxy`` is dead for now: the host was not contacted (no host failure), the URL waits its turn."""

    reason = "proxy"


class TlsError(TransportError):
    reason = "tls"
    transient = False


class FetchTimeout(TransportError):
    reason = "timeout"


class TurnTimeout(FetchTimeout):
    """The time limit ran out while the fetcher held the body back (big bodies take turns, ``fetch/wire.py``): the
    fetcher's load, not the server's slowness, so the URL goes back to its queue without a back-off (a retry is
    used: once they are all used up it is recorded with this reason)."""

    reason = "turn-timeout"


class ConnectionReset(TransportError):
    reason = "reset"


class BadHttp(TransportError):
    """The answer's head is not HTTP/1.x that even browsers read (a bad status line or an HTTP/0.9 answer, a NUL in a
    header, more than 256 headers, a line over 16 KiB, a head over 256 KiB, Content-Length values that differ): the
    server sends the same again, so it is retried once only (what a second try mends is the rare connection fed
    stray bytes), and its host backs off as after any failure."""

    reason = "bad-http"


class RenderError(TransportError):
    """The browser could not render the page (it crashed or was killed, or the page's time budget ran out)."""

    reason = "render"


class RenderMemory(RenderError):
    """The page's renderer died, most likely because its JavaScript heap passed ``--render-page-memory``: not
    retried (the same page would do it again)."""

    reason = "render-memory"
    transient = False


class TooLarge(TransportError):
    """Body exceeded the byte cap while streaming (the prefix received is kept)."""

    reason = "too-large"
    transient = False


class DecompressionBomb(TransportError):
    """Decoded body exceeded the decompressed-size cap."""

    reason = "bomb"
    transient = False


class BadContent(TransportError):
    """The server sent bytes that do not decode (broken gzip, bad chunking)."""

    reason = "bad-content"
    transient = False


# --- http: a complete answer we cannot use -----------------------------------------------------------------------
class HttpError(WebtrawlError):
    reason = "http"

    def __init__(self, status: int, message: str = "") -> None:
        super().__init__(message or f"HTTP {status}")
        self.status = status

    @property
    def klass(self) -> str:
        """``http-4xx`` or ``http-5xx``: the counter name. A status past 599 (LinkedIn's 999 for a crawler it
        refuses, a framework's 600s) has no class: read as a 5xx, as RFC 9110 15 says (the status is kept)."""
        return f"http-{min(self.status // 100, 5)}xx"


class HostDown(WebtrawlError):
    """The URL's host failed --park-after times in a row: its queued URLs end unrequested, kept for ``trawl
    requeue`` (fetch/giveup.py). An error, not a policy's drop: the site failed, as the requests that parked it did."""

    reason = "host-down"


# --- policy: our own rules refused the URL ---------------------------------------------------------------------
class PolicyError(WebtrawlError):
    reason = "policy"


class RobotsDisallowed(PolicyError):
    reason = "robots"


class RobotsUnavailable(PolicyError):
    """robots.txt kept answering 5xx or not at all: RFC 9309 says assume complete disallow."""

    reason = "robots-unavailable"


class ScopeError(PolicyError):
    reason = "scope"


class SitemapHostError(PolicyError):
    """A sitemap or feed listed a URL of another host (sitemaps.org cross-submission rule: not followed)."""

    reason = "sitemap-host"


class BudgetExceeded(PolicyError):
    reason = "budget"


class IpPolicyError(PolicyError):
    """The resolved address is not allowed (SSRF guard or --ip-allow)."""

    reason = "ip-policy"


class PortPolicyError(PolicyError):
    reason = "port-policy"


class SchemeError(PolicyError):
    reason = "scheme"


class BadUrl(PolicyError):
    """A URL that cannot be parsed or canonicalized."""

    reason = "bad-url"


# --- user code and outputs -------------------------------------------------------------------------------------------


def raised_at(exc: BaseException) -> str:
    """``file:line`` (the file's name) of the user's line that raised ``exc``, "" if it has no traceback: the place
    a user's failing code (a callback, a sink) is named by in a record or an error line. That is the innermost frame
    outside webtrawl, the standard library and installed packages (``page.css("a[")`` fails in cssselect, called
    by webtrawl, called by the callback's line), else the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    users = [frame for frame in frames if not os.path.abspath(frame.filename).startswith(_library_dirs())]
    frame = (users or frames)[-1] if frames else None
    return f"{Path(frame.filename).name}:{frame.lineno}" if frame is not None else ""


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """Directories of code that is not the user's: webtrawl's own, the standard library's, installed packages'."""
    paths = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.add(str(Path(__file__).parent))
    return tuple(os.path.join(os.path.abspath(path), "") for path in paths if path)


class UserCodeError(WebtrawlError):
    """The user's extraction rules or callback failed on one page: recorded on that page, the crawl goes on.
    ``where``: ``file:line`` of the user's code at fault (a callback's yield), "" if not known."""

    reason = "extract-error"
    where = ""


class CloseSpider(WebtrawlError):
    """Raised by a callback to end the crawl, as Scrapy's ``CloseSpider`` ends a spider's: what the callback yielded
    before is kept, every node drains (its pages in flight are stored) and exits 0; ``closed(reason)`` gets
    ``reason`` in the parser process whose callback raised it (``shutdown`` in the others). Not the page's error."""

    def __init__(self, reason: str = "cancelled") -> None:
        super().__init__(reason)
        self.close_reason = reason


class SinkFailed(WebtrawlError):
    """An output raised what is not an outage: a bug in a user's sink, or a row its destination refuses. The
    batch's URLs are not completed, so nothing is lost; restarting the parser would fail the same way, so the node
    stops at once with this line. Fix the sink (or the destination), then resume."""

    reason = "sink-failed"


class SinkUnavailable(WebtrawlError):
    """An output's destination is away for now (database restart, network error): pause, then retry the batch."""

    reason = "sink-unavailable"
