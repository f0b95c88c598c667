"""What a fetch gives back, whatever did the fetching (:mod:`webtrawl.fetch.base`): one complete HTTP answer.

Its own module so that the stages reading answers (routing, the parser's hand-off, the render heuristics) do not
load aiohttp.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urljoin

import msgspec

from webtrawl.formats.canonical import header_url
from webtrawl.formats.encoding import content_type_of
from webtrawl.messages import Exchange

REDIRECTS = frozenset({301, 302, 303, 307, 308})


class Response(msgspec.Struct):
    """A complete HTTP answer, any status. ``body`` is still content-encoded; ``truncated``: cut at a cap."""

    status: int
    reason: str = ""  # as received, latin-1 decoded (like the headers)
    http_version: str = "1.1"
    headers: list[tuple[str, str]] = msgspec.field(default_factory=list)  # as received, latin-1 decoded
    body: bytes = b""
    # The body in the chunks it came in, ``body`` then empty: only from HttpClient.fetch(parts=True), for a caller
    # that writes the body out without reading it (the plain fetch of a page, to the parsers' channel).
    body_parts: list[bytes] = msgspec.field(default_factory=list)
    truncated: bool = False
    ip: str = ""
    request_headers: list[tuple[str, str]] = msgspec.field(default_factory=list)
    fetch_time: float = 0.0  # epoch seconds at request start
    elapsed_ms: float = 0.0
    # Rendered by a browser (fetch/render/): why, the DOM after the scripts ran, the other requests it made (as
    # received) and the ones it refused (reason -> count). The fields above stay the navigation response.
    render_reason: str = ""
    dom: bytes | None = None
    exchanges: list[Exchange] = msgspec.field(default_factory=list)
    render_blocked: dict[str, int] = msgspec.field(default_factory=dict)
    navigations: list[str] = msgspec.field(default_factory=list)  # where the page's scripts sent it (refused)

    def redirect_target(self, url: str) -> str | None:
        """Where this answer to ``url`` sends the client, if it is a redirect with a Location (resolved against
        ``url``; raw UTF-8 bytes in it are UTF-8), else None."""
        location = self.header("location")
        if self.status not in REDIRECTS or not location:
            return None
        return urljoin(url, header_url(location.strip()))

    def wire(self) -> dict[str, Any]:
        """The answer as received (what a Page and a rendered page's Exchange both carry), as keyword arguments."""
        return {
            "status": self.status,
            "reason": self.reason,
            "http_version": self.http_version,
            "headers": self.headers,
            "body": self.body,
            "truncated": self.truncated,
            "request_headers": self.request_headers,
            "ip": self.ip,
            "fetch_time": self.fetch_time,
        }

    def page_fields(self) -> dict[str, Any]:
        """What a :class:`~webtrawl.messages.Page` takes of this answer, as keyword arguments: the answer as received
        and how it was fetched (a body left in chunks, ``body_parts``, is the caller's to send)."""
        return {
            **self.wire(),
            "elapsed_ms": self.elapsed_ms,
            "render_reason": self.render_reason,
            "dom": self.dom,
            "exchanges": self.exchanges,
            "render_blocked": self.render_blocked,
            "navigations": self.navigations,
        }

    def header(self, name: str) -> str | None:
        """First value of header ``name`` (case-insensitive), or None."""
        low = name.lower()
        for key, value in self.headers:
            if key.lower() == low:
                return value
        return None

    def header_values(self, name: str) -> list[str]:
        """Every value of header ``name`` (case-insensitive), in the order received."""
        low = name.lower()
        return [value for key, value in self.headers if key.lower() == low]

    def media_type(self) -> str:
        """The answer's media type (``text/html``), lowercased, as the parser reads it: the last valid Content-Type
        wins (``content_type_of``), so the fetcher's choices (what to render) agree with what is parsed. "" if none."""
        return content_type_of(self.header_values("content-type")).split(";", 1)[0].strip().lower()
