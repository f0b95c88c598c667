"""The robots.txt rules of one origin (RFC 9309) and their stored form.

``RobotsRules(body, token=...)`` is the public entry point: ``allowed(url)``, ``crawl_delay``, ``sitemaps``. The
body is compiled on first use into a :class:`~webtrawl.politeness.matcher.Matcher` holding only the groups that
apply to the token; identical bodies share one matcher per process. Fetching robots.txt and interpreting the
HTTP status is the fetcher's job (``webtrawl.fetch.robots``): politeness/ depends on no stage.

The stored value is the token's rules as the parse left them (normalised patterns, Crawl-delay, Sitemaps) plus a
few fields (msgpack, the rules zlib-compressed), not a pickle, so every fetcher process and node reads the same
bytes from the store. Storing the rules rather than the body spares every other fetcher that leases the origin
(and this one, after its LRU dropped them) the parse of the file: most of a big file's compile. A stored value
holds the rules of one product token and size cap; a fetcher with another one fetches the file again. Values of
version 1 (the body itself) still load.
"""

from __future__ import annotations

import math

import msgspec

from webtrawl.deflate import ERRORS, ZLIB
from webtrawl.politeness.matcher import MATCHERS, Matcher, compiled, digest_of
from webtrawl.politeness.robotstxt import DEFAULT_MAX_BYTES, Parsed, normalize_path, parse, path_of

_COMPRESS_OVER = 512
_LEVEL = 1  # the rules of a 590 KB file: 138 KB in 0.7 ms (level 3: 133 KB in 1.1 ms; RESULTS.md, issue 21)
_VERSION = 2
_DECODE_ERRORS: tuple[type[Exception], ...] = (msgspec.DecodeError, *ERRORS)
_OVERHEAD = 600  # the RobotsRules object, its attributes and its LRU slot
_RULES_PERSON = b"rules"


class _Stored(msgspec.Struct, array_like=True):
    version: int
    token: str
    status: int
    unavailable: bool
    failures: int
    expires_at: float
    error: str
    compressed: bool
    body: bytes  # version 1: the robots.txt body; 2: the token's rules (msgpack of _Rules)
    body_bytes: int = 0  # version 2: the size of the body the rules were read from
    max_bytes: int = 0  # version 2: the size cap they were read with


class _Rules(msgspec.Struct, array_like=True):
    """What :func:`~webtrawl.politeness.robotstxt.parse` found, patterns one per line (they hold no whitespace)."""

    disallow: str
    allow: str
    crawl_delay: float | None
    sitemaps: list[str]
    matched_token: bool

    def parsed(self) -> Parsed:
        return Parsed(
            allow=self.allow.split("\n") if self.allow else [],
            disallow=self.disallow.split("\n") if self.disallow else [],
            crawl_delay=self.crawl_delay,
            sitemaps=self.sitemaps,
            matched_token=self.matched_token,
        )


def _packed(parsed: Parsed) -> bytes:
    rules = _Rules(
        "\n".join(parsed.disallow), "\n".join(parsed.allow), parsed.crawl_delay, parsed.sitemaps, parsed.matched_token
    )
    return msgspec.msgpack.encode(rules)


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
        self._parsed: Parsed | None = None  # what the compile parsed, until encode() has packed it
        # rules read from the store (and the bytes that held them, their matcher's key), until compiled
        self._stored: tuple[bytes, _Rules] | None = None

    @property
    def matcher(self) -> Matcher:
        if self._matcher is None:
            if self._stored is not None:
                packed, rules = self._stored
                self._matcher, _ = MATCHERS.get(digest_of(packed, _RULES_PERSON), rules.parsed)
            else:
                self._matcher, self._parsed = compiled(self.body, self.token, self.max_bytes)
        return self._matcher

    def usable_for(self, token: str, max_bytes: int) -> bool:
        """Can a fetcher with this product token and size cap use these rules? Stored rules are one token's."""
        return self._stored is None or (self.token == token and self.max_bytes == max_bytes)

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
        self.body, self._parsed, self._stored = b"", None, None

    def fresh(self, now: float) -> bool:
        return now < self.expires_at

    def encode(self) -> bytes:
        data = b""
        if self.body_bytes and not self.unavailable:
            if self._stored is not None:
                data = msgspec.msgpack.encode(self._stored[1])
            else:
                if not self.body:
                    raise ValueError("encode() after drop_body(): the rules are gone")
                _ = self.matcher  # the compile's parse is packed: not a second parse
                parsed = self._parsed or parse(self.body, self.token, max_bytes=self.max_bytes)
                data = _packed(parsed)
        compressed = len(data) > _COMPRESS_OVER
        stored = _Stored(
            version=_VERSION,
            token=self.token,
            status=self.status,
            unavailable=self.unavailable,
            failures=self.failures,
            expires_at=self.expires_at if math.isfinite(self.expires_at) else 0.0,
            error=self.error,
            compressed=compressed,
            body=ZLIB.compress(data, _LEVEL) if compressed else data,
            body_bytes=self.body_bytes,
            max_bytes=self.max_bytes,
        )
        return msgspec.msgpack.encode(stored)

    @classmethod
    def decode(cls, data: bytes) -> RobotsRules:
        """Inverse of :meth:`encode`. Raises ValueError on bytes it did not write."""
        try:
            stored = msgspec.msgpack.decode(data, type=_Stored)
            body = ZLIB.decompress(stored.body) if stored.compressed else stored.body
            rules = msgspec.msgpack.decode(body, type=_Rules) if stored.version >= _VERSION and body else None
        except _DECODE_ERRORS as exc:
            raise ValueError(f"not a stored robots.txt: {exc}") from None
        out = cls(
            body if stored.version < _VERSION else b"",
            token=stored.token,
            status=stored.status,
            unavailable=stored.unavailable,
            failures=stored.failures,
            expires_at=stored.expires_at or math.inf,
            error=stored.error,
        )
        if stored.version >= _VERSION:
            out.max_bytes = stored.max_bytes
            out.body_bytes = stored.body_bytes if rules is not None else 0
            out._stored = (stored.body, rules) if rules is not None else None
        return out

    def __repr__(self) -> str:
        state = "unavailable" if self.unavailable else f"{len(self.body)} bytes"
        return f"RobotsRules({state}, status={self.status}, failures={self.failures}, error={self.error!r})"
