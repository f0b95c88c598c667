"""Undo Content-Encoding with a hard cap on the output, so a 10 KB gzip bomb cannot take a parser's memory.

Every decoder is driven with an output limit (zlib ``max_length``, brotli ``output_buffer_limit``, zstd
bounded reads): we ask for one byte more than the cap and call it a bomb if we get it, or, for a gzip stream that
starts like one, if its trailer says so (``_trailer_claims_more``). A body cut short by the fetcher's size cap (or by
the server) decodes to the prefix that arrived, unless it starts like a bomb and its last bytes read as such a
trailer; only bytes that are not valid for the coding are ``bad-content``.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from typing import Any

import brotli
import zstandard

from webtrawl.deflate import ERRORS, ZLIB
from webtrawl.errors import BadContent, DecompressionBomb

# gzip/deflate go through ISA-L (webtrawl.deflate): 2.4x less CPU to inflate a 174 KB corpus page (145 vs 345 us).

_ZSTD_WINDOW = 8 * 1024 * 1024  # RFC 9659: HTTP zstd decoders need no larger window
_ZSTD_READ = 256 * 1024
_BROTLI_STEP = 1024 * 1024
_HELD = 8 * 1024 * 1024  # decoded bytes of a gzip/deflate body held before the rest is only counted
_COUNT_STEP = 1024 * 1024
_PROBE = 2 * 1024 * 1024  # decoded bytes of the first member that tell its inflation ratio before more is held
# (a smaller probe splits the output of more legitimate pages in two, and joining the two copies it)
_BOMB_RATIO = 100  # past this, nothing is held: the body is counted first (to the cap), and decoded if it fits
GZIP_MAGIC = b"\x1f\x8b"
# Types whose body is a gzip file of its own: one that came with Content-Encoding: gzip is not decoded twice
GZIP_TYPES = frozenset({"application/gzip", "application/x-gzip", "application/x-gzip-compressed"})
_GZIP_CODINGS = frozenset({"gzip", "x-gzip"})
# The IANA HTTP Content Coding Registry: a name outside it is no coding, and the body is as it came
_CODINGS = frozenset(
    {
        "aes128gcm",
        "br",
        "compress",
        "dcb",
        "dcz",
        "deflate",
        "exi",
        "gzip",
        "pack200-gzip",
        "x-compress",
        "x-gzip",
        "zstd",
    }
)
_MAX_INFLATION = 1032  # deflate's most output per input byte (258-byte matches in ~2 bits): what a trailer can claim
_TRUST_TRAILER = True  # a bomb's gzip trailer may decide it (tests of the probe alone turn it off)


def _bomb(cap: int) -> DecompressionBomb:
    return DecompressionBomb(f"decoded body exceeds {cap} bytes")


def _zlib(data: bytes, cap: int, wbits: int) -> bytes:
    """zlib/gzip stream(s); concatenated gzip members (RFC 1952 allows them) are all decoded.

    At most ``_HELD`` decoded bytes are held while the size is unknown: a stream that goes on past them is only
    counted from there on (what is held is let go, output dropped as it comes), and decoded again if it fits the
    cap. A bomb then costs the parser no more memory than an ordinary page and is inflated once, up to the cap
    (counting it again from the start cost a sixth more); a legitimate body that big (rare) is inflated twice.
    A first member whose first ``_PROBE`` bytes came from more than ``_BOMB_RATIO`` times less input is not held
    at all, only counted the same way (and decoded again if it fits): the 8 MiB a bomb's held pass took were
    fresh pages to fault in after a heap trim. The same bytes are decoded up to the same points either way, so
    the verdicts (bomb, broken data, the decoded body) do not change; a first gzip member that inflates like a
    bomb and whose trailer says it decodes past the cap is refused at once (:func:`_trailer_claims_more`)."""
    limit = min(cap, _HELD)
    out: list[bytes] = []
    size = 0
    tail = data
    hold = True
    while True:
        d = ZLIB.decompressobj(wbits)
        if not size and limit >= _PROBE:
            chunk = d.decompress(tail, _PROBE)
            size = len(chunk)
            if size == _PROBE and not d.eof:
                if (len(tail) - len(d.unconsumed_tail)) * _BOMB_RATIO < size:  # the input the probe used
                    if tail is data and _trailer_claims_more(data, cap):
                        raise _bomb(cap)
                    hold, chunk = False, b""  # the probe's output let go before counting on
                    size = _count_to(d, d.unconsumed_tail, size, limit)
                else:
                    out.append(chunk)
                    chunk = d.decompress(d.unconsumed_tail, limit + 1 - size)  # the rest of the held pass
                    size += len(chunk)
        else:
            chunk = d.decompress(tail, limit + 1 - size)
            size += len(chunk)
        if hold:
            out.append(chunk)
        if size > limit:
            break
        tail = d.unused_data
        if not (d.eof and tail.startswith(GZIP_MAGIC)):  # trailing garbage after the last member is ignored
            return b"".join(out) if hold else _members(data, wbits)
    if size > cap:
        raise _bomb(cap)
    out.clear()
    _count_on(d, d.unconsumed_tail, size, cap, wbits)
    return _members(data, wbits)


def _trailer_claims_more(data: bytes, cap: int) -> bool:
    """Does ``data``, a gzip stream that inflates like a bomb, end in a trailer that says it decodes past ``cap``?

    The last four bytes of a gzip member are its decoded size (mod 2**32). Counting a bomb inflates the cap's worth
    of output, most of a bomb's cost to a parser (benchmarks/RESULTS.md, issue 21); the trailer tells at once. It
    is taken only where it cannot make a bomb pass (a small or wrapped size is counted as before) and only if the
    body's bytes could produce it. What it changes: a stream that starts like a bomb and whose trailer lies
    (cut, corrupted, or forged to say more than it holds) is refused as a bomb rather than decoded or found broken.
    """
    if not _TRUST_TRAILER or not data.startswith(GZIP_MAGIC) or len(data) < 18:  # 10-byte header, 8-byte trailer
        return False
    claimed = int.from_bytes(data[-4:], "little")
    return cap < claimed <= len(data) * _MAX_INFLATION


def _count_to(d: Any, tail: bytes, size: int, limit: int) -> int:
    """The held pass of :func:`_zlib` without holding: decode ``tail`` with ``d`` to ``limit + 1`` bytes in all
    (or the member's end, or the input's), in steps, keeping nothing; the size reached."""
    while not d.eof and size <= limit:
        chunk = d.decompress(tail, min(_COUNT_STEP, limit + 1 - size))
        size += len(chunk)
        tail = d.unconsumed_tail
        if not chunk and not tail:
            break  # input used up (a cut body)
    return size


def _members(data: bytes, wbits: int) -> bytes:
    """The decoded members of a stream already counted to fit the cap."""
    out: list[bytes] = []
    while True:
        d = ZLIB.decompressobj(wbits)
        out.append(d.decompress(data))
        data = d.unused_data
        if not (d.eof and data.startswith(GZIP_MAGIC)):
            return b"".join(out)


def _count_on(d: Any, tail: bytes, size: int, cap: int, wbits: int) -> None:
    """Go on decoding ``tail`` with ``d``, then the members after it, without keeping the output (``size`` bytes
    came out before); raise the bomb as soon as more than ``cap`` bytes came out."""
    while True:
        size = _count_to(d, tail, size, cap)
        if size > cap:
            raise _bomb(cap)
        tail = d.unused_data
        if not (d.eof and tail.startswith(GZIP_MAGIC)):
            return
        d = ZLIB.decompressobj(wbits)


def _gzip(data: bytes, cap: int) -> bytes:
    return _zlib(data, cap, 32 + zlib.MAX_WBITS)  # 32: accept gzip or zlib header (servers mix them up)


def _deflate(data: bytes, cap: int) -> bytes:
    """``deflate`` is meant to be zlib-wrapped, but many servers send raw deflate: try both."""
    try:
        return _zlib(data, cap, zlib.MAX_WBITS)
    except ERRORS:
        return _zlib(data, cap, -zlib.MAX_WBITS)


def _brotli(data: bytes, cap: int) -> bytes:
    """In steps of ``_BROTLI_STEP``: brotli may overshoot ``output_buffer_limit`` by half again, so one call
    with the whole cap could allocate 1.5x the cap; small steps keep the overshoot to one step."""
    dec = brotli.Decompressor()
    out: list[bytes] = []
    size = 0
    chunk = dec.process(data, output_buffer_limit=min(_BROTLI_STEP, cap + 1))
    while True:
        out.append(chunk)
        size += len(chunk)
        if size > cap:
            raise _bomb(cap)
        if dec.is_finished() or dec.can_accept_more_data():  # done, or the input ran out (a cut body)
            return b"".join(out)
        chunk = dec.process(b"", output_buffer_limit=min(_BROTLI_STEP, cap + 1 - size))


def _zstd(data: bytes, cap: int) -> bytes:
    dctx = zstandard.ZstdDecompressor(max_window_size=_ZSTD_WINDOW)
    out: list[bytes] = []
    size = 0
    with dctx.stream_reader(io.BytesIO(data), read_across_frames=True) as reader:
        while True:
            chunk = reader.read(min(_ZSTD_READ, cap + 1 - size))
            if not chunk:
                return b"".join(out)
            size += len(chunk)
            out.append(chunk)
            if size > cap:
                raise _bomb(cap)


_DECODERS: dict[str, Callable[[bytes, int], bytes]] = {
    "gzip": _gzip,
    "x-gzip": _gzip,
    "deflate": _deflate,
    "br": _brotli,
    "zstd": _zstd,
}
_ERRORS = (*ERRORS, brotli.error, zstandard.ZstdError)


def content_codings(values: list[str]) -> list[str]:
    """The codings named by all Content-Encoding header values, in the order they were applied."""
    return [c for v in values for part in v.split(",") if (c := part.strip().lower()) and c != "identity"]


def decompress(body: bytes, codings: list[str], cap: int, *, gzip_inside: bool = True) -> bytes:
    """``body`` with ``codings`` undone (last applied first; a name that is no coding is passed over, as Chromium
    does). Raises DecompressionBomb or BadContent.

    With ``gzip_inside`` (the body's type is not a gzip file, see GZIP_TYPES), a gzip body that is a gzip stream once
    more after that is decoded again (:func:`_gzip_again`)."""
    body = _undo(body, codings, cap)
    if gzip_inside and body[:2] == GZIP_MAGIC and not _GZIP_CODINGS.isdisjoint(codings):
        return _gzip_again(body, cap)
    return body


def _gzip_again(body: bytes, cap: int) -> bytes:
    """A body compressed twice under one ``Content-Encoding: gzip`` (a proxy or CDN that compressed an answer the
    server had already compressed, or a pre-compressed ``.html.gz`` served compressed): curl, wget and browsers
    decode once and show binary garbage, and the crawl stored an empty page (no title, no links, garbage text).
    No page's own bytes start with gzip's magic number, so the second stream is the page; the WARC keeps the
    answer as received. Bytes that only start like gzip are kept as they are; a bomb inside is a bomb."""
    try:
        return _gzip(body, cap)
    except ERRORS:
        return body


def _undo(body: bytes, codings: list[str], cap: int) -> bytes:
    for coding in reversed(codings):
        if not body:
            return body
        decoder = _DECODERS.get(coding)
        if decoder is None:
            if coding not in _CODINGS:
                # No coding at all (PHP's header("Content-Encoding: UTF-8"), "none", "text/html"): Chromium passes
                # the body through as it came ("Unknown encoding type"), where the page was bad-content
                continue
            raise BadContent(f"unsupported content-encoding {coding!r}")  # compress...: its bytes are encoded
        try:
            body = decoder(body, cap)
        except _ERRORS as exc:
            raise BadContent(f"broken {coding} data: {exc}") from None
    return body
