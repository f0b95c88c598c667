"""The robots.txt rules of one origin (RFC 9309) and their stored form.

``RobotsRules(body, token=...)`` is the public entry point: ``allowed(url)``, ``crawl_delay``, ``sitemaps``. The
body is compiled on first use into a :class:`~webtrawl.politeness.matcher.Matcher` holding only the groups that
apply to the token; identical bodies share one matcher per process. Fetching robots.txt and interpreting the
HTTP status is the fetcher's job (``webtrawl.fetch.robots``): politeness/ depends on no stage.

The stored value is the robots.txt body plus a few fields (msgpack, body zlib-compressed), not a pickle, so
every fetcher process and node reads the same bytes from the store.
"""

from __future__ import annotations

import math

import msgspec

from webtrawl.deflate import ERRORS, MAX_LEVEL, ZLIB
from webtrawl.politeness.matcher import Matcher, compiled
from webtrawl.politeness.robotstxt import DEFAULT_MAX_BYTES, normalize_path, path_of

_COMPRESS_OVER = 512
_DECODE_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, *ERRORS)
_OVERHEAD = 600  # the RobotsRules object, its attributes and its LRU slot


class _Stored(msgspec.Struct, array_like=True):
    version: int
    token: str
    status: int
    unavailable: bool
    failures: int
    expires_at: float
    error: str
    compressed: bool
    body: bytes


class RobotsRules:
    """The rules of one origin for our product token; ``unavailable`` means disallow everything for now."""

    def __init__(
        self,
        body: bytes = b"",
        *,
        token: str = "*",
        status: int = 200,
        unavailable: bool = False,
        failures: int = 0,
        expires_at: float = math.inf,
        error: str = "",
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.body = body  # decoded robots.txt bytes; empty: allow all
        self.token = token
        self.status = status  # HTTP status of the (last hop of the) robots.txt request; 0: no answer
        self.unavailable = unavailable
        self.failures = failures  # consecutive unavailable results
        self.expires_at = expires_at  # epoch seconds
        self.error = error  # why it is unavailable/empty: "http-5xx", "timeout", "dns", "redirects"...
        self.max_bytes = max_bytes  # bytes of the body that are read (RFC 9309 2.5: at least 500 KiB)
        self.body_bytes = len(body)  # kept when the body is dropped (see drop_body)
        self._matcher: Matcher | None = None

    @property
    def matcher(self) -> Matcher:
        if self._matcher is None:
            self._matcher = compiled(self.body, self.token, self.max_bytes)
        return self._matcher

    def allowed(self, url: str) -> bool:
        """May ``url`` (absolute, or a path) be fetched? The URL's origin is not checked."""
        if self.unavailable:
            return False
        if not self.body_bytes:
            return True
        return self.matcher.allowed(normalize_path(path_of(url)))

    @property
    def crawl_delay(self) -> float | None:
        """Crawl-delay of the group(s) matching the product token, else of ``*`` (the caller caps it)."""
        if self.unavailable or not self.body_bytes:
            return None
        return self.matcher.crawl_delay

    @property
    def sitemaps(self) -> list[str]:
        """``Sitemap:`` URLs anywhere in the file, in order, without duplicates."""
        if self.unavailable or not self.body_bytes:
            return []
        return self.matcher.sitemaps

    @property
    def size(self) -> int:
        """Estimated bytes this object keeps alive (body and compiled rules): what the fetcher's LRU counts."""
        return _OVERHEAD + len(self.body) + (self.matcher.size if self.body_bytes and not self.unavailable else 0)

    def drop_body(self) -> None:
        """Compile now and keep only the matcher: a cache of many origins then holds what checks need (a big
        file's body is a third of its memory). :meth:`encode` needs the body, so it is called before."""
        if self.body_bytes and not self.unavailable:
            _ = self.matcher
        self.body = b""

    def fresh(self, now: float) -> bool:
        return now < self.expires_at

    def encode(self) -> bytes:
        if self.body_bytes and not self.body:
            raise ValueError("encode() after drop_body(): the body is gone")
        compressed = len(self.body) > _COMPRESS_OVER
        stored = _Stored(
            version=1,
            token=self.token,
            status=self.status,
            unavailable=self.unavailable,
            failures=self.failures,
            expires_at=self.expires_at if math.isfinite(self.expires_at) else 0.0,
            error=self.error,
            compressed=compressed,
            body=ZLIB.compress(self.body, MAX_LEVEL) if compressed else self.body,
        )
        return msgspec.msgpack.encode(stored)

    @classmethod
    def decode(cls, data: bytes) -> RobotsRules:
        """Inverse of :meth:`encode`. Raises ValueError on bytes it did not write."""
        try:
            stored = msgspec.msgpack.decode(data, type=_Stored)
            body = ZLIB.decompress(stored.body) if stored.compressed else stored.body
        except _DECODE_ERRORS as exc:
            raise ValueError(f"not a stored robots.txt: {exc}") from None
        return cls(
            body,
            token=stored.token,
            status=stored.status,
            unavailable=stored.unavailable,
            failures=stored.failures,
            expires_at=stored.expires_at or math.inf,
            error=stored.error,
        )

    def __repr__(self) -> str:
        state = "unavailable" if self.unavailable else f"{len(self.body)} bytes"
        return f"RobotsRules({state}, status={self.status}, failures={self.failures}, error={self.error!r})"
