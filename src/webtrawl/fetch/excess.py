"""Bytes after the end of an answer: the answer is kept, the bytes are dropped and the connection is closed.

A server whose ``Content-Length`` is shorter than the body it writes (a length counted in characters, not bytes),
or that sends a body with a ``204``/``304`` or after ``Content-Length: 0`` on a redirect, writes bytes past the end
of its answer. Browsers and curl keep the answer as framed ("Excess found") and close the connection. aiohttp's
parser reads on in the same chunk, takes the extra bytes for the next answer's status line and raises, which threw
away the complete answer already parsed: the crawl recorded a ``reset``, retried the page and backed the host off,
and every try failed the same way (a site with that bug on every page was parked).

:class:`TolerantHandler` is the connection's protocol (``TCPConnector``'s factory): its parser is wrapped so that
an error raised once the answer's body is complete (or, when the whole answer and the extra bytes came in one
chunk, once the answer is parsed again up to its framed end) hands on the answer and drops the rest. The crawler
never pipelines, so nothing after an answer on its connection can be wanted; the connection is then closed rather
than reused, as curl does. Any other parse error is raised as before.
"""

from __future__ import annotations

import asyncio
import functools
import re
from typing import Any, cast

import aiohttp
from aiohttp.client_proto import ResponseHandler
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.streams import EMPTY_PAYLOAD

_HEAD_END = re.compile(rb"\r?\n\r?\n")  # the parser accepts bare LF line ends too
_NOTHING: tuple[tuple[()], bool, bytes] = ((), False, b"")
_MAX_HEADS = 8  # interim (1xx) answers before the final one, at most, when an answer is parsed again


def install(connector: aiohttp.TCPConnector) -> None:
    """Make :class:`TolerantHandler` the protocol of ``connector``'s connections (aiohttp has no argument for it)."""
    factory = functools.partial(TolerantHandler, loop=asyncio.get_running_loop())
    connector._factory = cast("functools.partial[ResponseHandler]", factory)


class TolerantHandler(ResponseHandler):
    """aiohttp's ``ResponseHandler`` whose parser keeps an answer followed by bytes that are no part of it."""

    def set_response_params(self, **params: Any) -> None:
        super().set_response_params(**params)
        self._parser: Any = _Guard(self, self._parser, params)

    def fresh_parser(self, params: dict[str, Any]) -> Any:
        """A new parser, built as aiohttp builds one for a request (its arguments differ between versions)."""
        guard = self._parser
        super().set_response_params(**params)
        fresh = self._parser
        self._parser = guard
        return fresh


class _Guard:
    """Wraps one request's parser (``ResponseHandler.set_response_params`` builds one per request)."""

    def __init__(self, handler: TolerantHandler, parser: Any, params: dict[str, Any]) -> None:
        self._handler = handler
        self._parser = parser
        self._params = params
        self._head: list[bytes] = []  # what was fed before the answer's head was parsed (the head, maybe more)
        self._payload: Any = None  # the body of the answer handed on
        self._ended = False  # an answer ended before bytes that are no part of it: drop whatever comes

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)

    def feed_data(self, data: bytes) -> Any:
        if self._ended:
            return _NOTHING
        if self._payload is None:
            self._head.append(data)  # not copied: joined only if the answer has to be parsed again
        try:
            result = self._parser.feed_data(data)
        except HttpProcessingError:
            recovered = self._recover()
            if recovered is None:
                raise
            self._ended = True
            self._handler.force_close()  # out of step with the server: never reused
            if recovered is _NOTHING and self._handler.transport is not None:
                self._handler.transport.close()  # the answer is whole: its connection may be idle in the pool
            return recovered
        messages = result[0]
        if messages:
            self._head = []
            if messages[-1][0].code >= 200:  # the final answer (not an interim 1xx one)
                self._payload = messages[-1][1]
        return result

    def _recover(self) -> Any:
        """The answer the parser completed before its error, as ``feed_data`` returns it; None if there is none."""
        if self._payload is not None:  # handed on already: whole if the error came after its body
            return _NOTHING if self._payload.is_eof() else None
        return self._parse_again(b"".join(self._head))

    def _parse_again(self, data: bytes) -> Any:
        """Parse ``data`` (the answer and the bytes after it) with a new parser, up to the answer's framed end."""
        parser = self._handler.fresh_parser(self._params)
        messages: list[Any] = []
        at = 0
        for _ in range(_MAX_HEADS):
            end = _HEAD_END.search(data, at)
            if end is None:
                return None
            try:
                found = parser.feed_data(data[at : end.end()])[0]
            except HttpProcessingError:
                return None
            if len(found) != 1:
                return None
            messages.extend(found)
            message, payload = found[0]
            at = end.end()
            if message.code >= 200:
                break
        else:
            return None
        if payload is not EMPTY_PAYLOAD and not payload.is_eof():
            length = message.headers.get("Content-Length", "")
            if message.chunked or not length.isdigit() or len(data) < at + int(length):
                return None  # not framed by a length, or the error was inside the body: not ours to keep
            try:
                parser.feed_data(data[at : at + int(length)])
            except HttpProcessingError:
                return None
            if not payload.is_eof():
                return None
        self._parser = parser
        return messages, False, b""
