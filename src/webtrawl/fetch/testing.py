"""Fakes of the fetch seam for unit tests: canned answers instead of sockets, as httpx's ``MockTransport`` allows.

:class:`FakeWeb` answers requests by URL (robots.txt included) and stands where the process's ``HttpClient`` stands
for the robots cache and host sessions; :class:`FakeFetcher` is a :class:`~webtrawl.fetch.base.Fetcher` that
answers from one, in either role; :class:`PageCollector` takes the pages a fetcher would send to the parsers. With a
fake frontier (``tests/fixtures/fake_frontier.py``) the fetcher's decisions (robots first, politeness gaps,
retries, redirects, routing) run without Redis or a network::

    web = FakeWeb({"http://a.test/robots.txt": answer(404), "http://a.test/": answer(200, b"<html>")})
    fetcher = FakeFetcher(web)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence

import msgspec

from webtrawl.errors import ConnectError
from webtrawl.fetch.base import FetchRequest
from webtrawl.fetch.response import Response
from webtrawl.messages import Page
from webtrawl.politeness import RobotsRules

Answer = Response | Exception  # an exception is raised (a TransportError, a PolicyError...)


def answer(status: int = 200, body: bytes = b"", headers: Sequence[tuple[str, str]] = (), **fields: object) -> Response:
    """A canned answer; HTML unless ``headers`` say otherwise."""
    have = {name.lower() for name, _ in headers}
    full = [*headers] + ([] if "content-type" in have else [("Content-Type", "text/html")])
    return Response(status=status, reason="", headers=full, body=body, **fields)  # type: ignore[arg-type]


class FakeWeb:
    """Canned answers by URL. A list is answered in order, its last answer again once the others are used (a 503,
    then a 200: a retry that works). A URL without an answer fails to connect, like a host that is not there."""

    keepalive_s = 15.0  # what host sessions ask of a connection pool
    max_idle = 384

    def __init__(self, answers: Mapping[str, Answer | Sequence[Answer]] | None = None) -> None:
        self._answers: dict[str, list[Answer]] = {}
        for url, given in (answers or {}).items():
            self.add(url, given)
        self.requests: list[tuple[str, dict[str, str]]] = []  # (url, extra headers) of every request, in order
        self.kept_idle: list[str] = []  # URLs whose connection a host session kept open while it slept

    def add(self, url: str, given: Answer | Sequence[Answer]) -> None:
        self._answers[url] = list(given) if isinstance(given, Sequence) else [given]

    def requested(self, url: str) -> int:
        return sum(1 for asked, _ in self.requests if asked == url)

    async def fetch(
        self,
        url: str,
        *,
        max_body: int | None = None,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Response:
        """``HttpClient.fetch``'s signature: the robots cache fetches robots.txt here."""
        self.requests.append((url, dict(headers or {})))
        queue = self._answers.get(url)
        if not queue:
            raise ConnectError(f"no canned answer for {url}")
        given = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(given, Exception):
            raise given
        return given

    @contextlib.contextmanager
    def keeping_idle(self, url: str) -> Iterator[None]:
        self.kept_idle.append(url)
        yield

    def trim_idle(self, keep: int | None = None) -> int:
        return 0


class FakeFetcher:
    """A :class:`~webtrawl.fetch.base.Fetcher` answering from a :class:`FakeWeb`; ``role`` ``render`` stands for
    the browser (its answers carry ``render_reason``)."""

    def __init__(self, web: FakeWeb, role: str = "plain", name: str = "fake") -> None:
        self.web = web
        self.role = role
        self.name = name
        self.requests: list[FetchRequest] = []

    async def fetch(self, request: FetchRequest, rules: RobotsRules) -> Response:
        self.requests.append(request)
        if self.role == "plain" and request.prior is not None:
            return request.prior
        resp = await self.web.fetch(request.url, headers=request.headers or None)
        if self.role == "render":
            return msgspec.structs.replace(resp, render_reason=request.reason, dom=resp.body)
        return resp

    async def close(self) -> None:
        """Nothing to close."""


class PageCollector:
    """Stands for the parsers' channel: keeps every page sent."""

    def __init__(self) -> None:
        self.pages: list[Page] = []

    async def send(self, page: Page, body_parts: Sequence[bytes] = ()) -> None:
        if body_parts:
            page.body = b"".join(body_parts)  # what a parser receives
        self.pages.append(page)

    async def close(self) -> None:
        """Nothing to close."""
