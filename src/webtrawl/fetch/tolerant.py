"""Answers browsers read and aiohttp's parser refuses: bytes past the end of an answer, and heads with common faults.

A server whose ``Content-Length`` is shorter than the body it writes (a length counted in characters, not bytes),
or that sends a body with a ``204``/``304`` or after ``Content-Length: 0`` on a redirect, writes bytes past the end
of its answer. Browsers and curl keep the answer as framed ("Excess found") and close the connection. aiohttp's
parser reads on in the same chunk, takes the extra bytes for the next answer's status line and raises, which threw
away the complete answer already parsed: the crawl recorded a ``reset``, retried the page and backed the host off,
and every try failed the same way (a site with that bug on every page was parked).

The parser (llhttp) is also stricter than browsers about heads: a header line without a colon, a blank before the
colon, ``Content-Length`` sent twice with the same value, or beside ``Transfer-Encoding: chunked``. Browsers skip
the line, or use the one length, or the chunking; the crawler lost such pages the same way.

:class:`TolerantHandler` is the connection's protocol (``TCPConnector``'s factory): its parser is wrapped so that
an error raised once the answer's body is complete hands on the answer and drops the rest, and an answer the
parser refused is parsed again by a new parser, first as it came (up to its framed end: bytes past it are
dropped), then with its head mended (:func:`mend_head`). The crawler never pipelines, so nothing after an answer on
its connection can be wanted; after dropped bytes the connection is closed rather than reused, as curl does. Any
other error (a cut body, broken chunking, lengths that differ, a NUL in a header) is raised as before; one inside
a body already handed on (a chunk size that is no number) also ends that body's read at once as a
:class:`BrokenBody`: aiohttp closed the connection but left the read waiting until the time limit. The WARC holds
the head as parsed (as for any answer: obs-fold lines joined, line ends made CRLF), so a mended one.

The guard also caps the bytes of an answer's head (:data:`MAX_RESPONSE_HEAD`, interim 1xx heads included): the
client's per-line limits let the parser take 256 lines of 16 KiB, ~4 MiB of head per request in flight, so one
hostile server could make a fetcher hold hundreds of MiB. Browsers cap the whole head (Chrome: 256 KiB,
ERR_RESPONSE_HEADERS_TOO_BIG); past it the answer is refused (``bad-http``) before the parser sees more.
"""

from __future__ import annotations

import asyncio
import functools
import re
from typing import Any, cast

import aiohttp
from aiohttp.client_exceptions import ClientPayloadError
from aiohttp.client_proto import ResponseHandler
from aiohttp.http_exceptions import BadHttpMessage, HttpProcessingError

_HEAD_END = re.compile(rb"\r?\n\r?\n")  # the parser accepts bare LF line ends too
_NOTHING: tuple[tuple[()], bool, bytes] = ((), False, b"")
_MAX_HEAD = 64 * 1024  # the most of a refused head kept while waiting for its end (the client's lines are 16 KiB)
MAX_RESPONSE_HEAD = 256 * 1024  # the most bytes of an answer's head read, as Chrome's cap (see the module's doc)
_MAX_HEADS = 8  # heads (interim 1xx answers, then the final one) read, at most, when an answer is parsed again


class BrokenBody(ClientPayloadError):
    """The body's framing broke in the bytes that came (not a connection cut before its end)."""


def install(connector: aiohttp.TCPConnector) -> None:
    """Make :class:`TolerantHandler` the protocol of ``connector``'s connections (aiohttp has no argument for it)."""
    factory = functools.partial(TolerantHandler, loop=asyncio.get_running_loop())
    connector._factory = cast("functools.partial[ResponseHandler]", factory)


class TolerantHandler(ResponseHandler):
    """aiohttp's ``ResponseHandler`` whose parser keeps an answer followed by bytes that are no part of it."""

    requests = 0  # requests sent on this connection: more than one on a kept-alive connection

    def set_response_params(self, **params: Any) -> None:
        super().set_response_params(**params)
        self._parser: Any = _Guard(self, self._parser, params)
        self.requests += 1

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
        self._head_size = 0  # the bytes fed before the final answer's head was parsed (see MAX_RESPONSE_HEAD)
        self._payload: Any = None  # the body of the answer handed on
        self._ended = False  # an answer ended before bytes that are no part of it: drop whatever comes
        self._refused: HttpProcessingError | None = None  # the head was refused before its end came: wait for it

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)

    def feed_eof(self) -> Any:
        """The connection closed. After an answer that ended before extra bytes there is nothing unfinished: the
        refused parser would raise, and aiohttp would set that error on the answer's body not yet read."""
        if self._ended or self._refused is not None:  # a refused head never came whole: the close is the error
            return None
        return self._parser.feed_eof()

    def feed_data(self, data: bytes) -> Any:
        if self._ended:
            return _NOTHING
        if self._payload is None:  # a body's chunk pays this check only
            self._head.append(data)  # not copied: joined only if the answer has to be parsed again
            self._head_size += len(data)
            if self._head_size > MAX_RESPONSE_HEAD:
                self._check_head_size(data)
        if self._refused is not None:
            return self._again(self._refused)
        try:
            result = self._parser.feed_data(data)
        except HttpProcessingError as exc:
            if self._payload is not None:  # handed on already: whole if the error came after its body
                if not self._payload.is_eof():
                    self._ended = True  # nothing more to read: the connection is closed for this error
                    self._payload.set_exception(BrokenBody(f"broken body: {' '.join(exc.message.split())}"), exc)
                    raise
                self._end(idle=True)
                return _NOTHING
            return self._again(exc)
        messages = result[0]
        if messages:
            self._head = []
            if messages[-1][0].code >= 200:  # the final answer (not an interim 1xx one)
                self._payload = messages[-1][1]
        return result

    def _check_head_size(self, data: bytes) -> None:
        """Raise if the head does not end within MAX_RESPONSE_HEAD bytes. ``data``, the chunk that took the count
        past it, may hold the head's end and then body bytes: only the bytes up to the cap are searched (with the
        end of the chunk before, for a blank line split between chunks). A 1xx head that ends there lets this
        chunk through, and the next chunk of the head is refused: the parser never holds more than one chunk
        past the cap."""
        allowed = MAX_RESPONSE_HEAD - (self._head_size - len(data))
        if allowed > 0:
            before = self._head[-2][-3:] if len(self._head) > 1 else b""
            if _HEAD_END.search(before + data[:allowed]) is not None:
                return
        self._ended = True  # nothing of this answer is read on: the connection closes for the error
        raise BadHttpMessage(f"response head over {MAX_RESPONSE_HEAD // 1024} KiB")

    def _again(self, refused: HttpProcessingError) -> Any:
        """Parse what came for this answer again (as it came, then mended); raise ``refused`` if that fails. A head
        refused before its end came (a head longer than a TCP segment) waits for its end, up to _MAX_HEAD bytes;
        bytes that do not even start as an answer (a stale one's extra bytes on a reused connection) do not wait."""
        received = b"".join(self._head)
        if _HEAD_END.search(received) is None and len(received) <= _MAX_HEAD and received[:5].upper() == b"HTTP/":
            self._refused = refused
            return _NOTHING
        self._refused = None
        recovered = self._parse_again(received, lenient=False) or self._parse_again(received, lenient=True)
        if recovered is None:
            raise refused
        return recovered

    def _end(self, *, idle: bool) -> None:
        """The answer ended before bytes that are no part of it: drop what comes, never reuse the connection."""
        self._ended = True
        self._handler.force_close()
        if idle and self._handler.transport is not None:
            self._handler.transport.close()  # the answer is whole: its connection may be idle in the pool

    def _parse_again(self, data: bytes, *, lenient: bool) -> Any:
        """Parse ``data`` (all that came for this answer) with a new parser, as ``feed_data`` returns it, or None.

        Bytes after the answer's end are dropped. ``lenient``: each head is first mended as browsers read it
        (:func:`mend_head`); the new parser then reads the rest of the answer as it comes."""
        parser = self._handler.fresh_parser(self._params)
        messages: list[Any] = []
        at = 0
        for _ in range(_MAX_HEADS):
            end = _HEAD_END.search(data, at)
            if end is None:
                return None
            head = data[at : end.end()]
            if lenient:  # each head as browsers read it; one with nothing to mend (a clean 103 beside it) as it came
                head = mend_head(head) or head
            try:
                found = parser.feed_data(head)[0]
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
        excess = False
        try:
            if at < len(data) and parser.feed_data(data[at:])[0]:
                excess = True  # bytes past the end that read as an answer of their own
        except HttpProcessingError:
            if not payload.is_eof():
                return None  # the error is inside the body: not ours to mend
            excess = True
        self._parser, self._payload, self._head = parser, payload, []
        if excess:
            self._end(idle=False)
        return messages, False, b""


_STATUS = re.compile(rb"HTTP/(\d\.\d)[ \t]+(\d{3})(?:[ \t]+(.*))?\Z", re.IGNORECASE | re.DOTALL)
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")


def mend_head(head: bytes) -> bytes | None:
    """An answer's head as browsers read it, for the parser that refused it; None if there is nothing to mend or it
    cannot be. A line without a colon (or whose name is not a token) is dropped, blanks before the colon are cut,
    ``Content-Length`` given several times with one value (``30`` twice, ``30, 30``) is given once, and a
    ``Content-Length`` beside ``Transfer-Encoding: chunked`` is dropped (RFC 9112 6.3: chunked wins), one that is
    not a number (``-1``) is dropped (the body then runs to the connection's end), ``Transfer-Encoding: identity``
    (no coding, from RFC 2616's drafts) is dropped (Chrome reads the length beside it), and the status line may
    have more than one blank or a lower-case ``http/``. Lengths that differ stay an error, as in browsers."""
    lines = [line.removesuffix(b"\r") for line in head.split(b"\n")]
    status = _STATUS.match(lines[0])
    out = [b"HTTP/%s %s%s" % (status[1], status[2], b" " + status[3] if status[3] else b"") if status else lines[0]]
    lengths: list[bytes] = []
    chunked = False
    for line in lines[1:]:
        if not line:
            continue
        if line[:1] in (b" ", b"\t"):  # obs-fold: a continuation of the line before
            out.append(line)
            continue
        name, colon, value = line.partition(b":")
        name = name.rstrip(b" \t")
        if not colon or _TOKEN.match(name) is None:
            continue
        low = name.lower()
        if low == b"content-length":
            lengths.extend(part.strip() for part in value.split(b","))
            continue
        if low == b"transfer-encoding":
            coding = value.strip().lower()
            if coding == b"identity":  # no coding (RFC 2616 drafts): llhttp refuses it beside a length
                continue
            chunked = chunked or b"chunked" in coding
        out.append(name + b":" + value)
    numbers = {int(length) for length in lengths if length.isdigit()}
    if numbers and not chunked:
        if len(numbers) != 1:
            return None
        out.append(b"Content-Length: %d" % numbers.pop())
    mended = b"\r\n".join(out) + b"\r\n\r\n"
    return mended if mended != head else None
