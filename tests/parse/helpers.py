"""Pages built the way a fetcher hands them over, and a default parse context."""

from __future__ import annotations

import dataclasses
import gzip
from collections.abc import Callable, Sequence
from typing import Any

from webtrawl.config import Limits, Politeness
from webtrawl.messages import Lease, Page
from webtrawl.parse import ParseContext, Scope
from webtrawl.store import Drop, PageOutput

URL = "http://site.example/dir/page.html"


def make_page(
    body: bytes = b"",
    *,
    url: str = URL,
    status: int = 200,
    content_type: str | None = "text/html",
    headers: list[tuple[str, str]] | None = None,
    gzipped: bool = False,
    depth: int = 0,
    hops: int = 0,
    route: str = "",
    **fields: Any,
) -> Page:
    hdrs = list(headers or [])
    if content_type is not None:
        hdrs.insert(0, ("Content-Type", content_type))
    if gzipped:
        body = gzip.compress(body)
        hdrs.append(("Content-Encoding", "gzip"))
    host = url.split("/")[2]
    lease = Lease(token="n.p0.1", shard=3, host=host, url=url, depth=depth, hops=hops, retries=1, route=route)
    return Page(
        lease=lease,
        status=status,
        reason="OK" if status == 200 else "",
        headers=hdrs,
        body=body,
        request_headers=[("Host", host), ("User-Agent", "webtrawl/0.1")],
        ip="127.0.0.1",
        fetch_time=1_700_000_000.25,
        elapsed_ms=42.0,
        **fields,
    )


def make_ctx(
    *,
    scope: Scope | None = None,
    url_allowed: Callable[[str, int], str | None] | None = None,
    **limits: Any,
) -> ParseContext:
    return ParseContext(
        limits=dataclasses.replace(Limits(), **limits),
        politeness=Politeness(),
        product_token="webtrawl",
        scope=scope or Scope("any", [], [], []),
        url_allowed=url_allowed,
    )


class RecordingSink:
    """Keeps what it is given and logs each call into the frontier's log, so their order can be checked."""

    name = "recording"

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.outputs: list[PageOutput] = []
        self.drops: list[Drop] = []

    def write(self, batch: Sequence[PageOutput]) -> None:
        self.log.append(f"write {len(batch)}")
        self.outputs.extend(batch)

    def write_drops(self, drops: Sequence[Drop]) -> None:
        self.log.append(f"write_drops {len(drops)}")
        self.drops.extend(drops)

    def flush(self) -> None:
        self.log.append("flush")

    def close(self) -> None:
        """Nothing to close."""
