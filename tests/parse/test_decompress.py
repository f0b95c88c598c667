"""Content-Encoding: every coding decodes, stacked codings unwind in order, bombs stop at the cap."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import brotli
import pytest
import zstandard

from webtrawl.errors import BadContent, DecompressionBomb
from webtrawl.parse.decompress import content_codings, decompress

TEXT = b"<html><head><title>x</title></head><body>" + b"hello world " * 2000 + b"</body></html>"
CAP = 1024 * 1024


def _deflate_raw(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return c.compress(data) + c.flush()


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", _deflate_raw),
        ("br", brotli.compress),
        ("zstd", zstandard.ZstdCompressor().compress),
        ("identity", lambda b: b),
    ],
)
def test_each_coding(coding: str, encode: object) -> None:
    assert callable(encode)
    assert decompress(encode(TEXT), content_codings([coding]), CAP) == TEXT


def test_stacked_codings_unwind_last_first() -> None:
    body = brotli.compress(gzip.compress(TEXT))  # gzip applied first, then br
    assert content_codings(["gzip, br"]) == ["gzip", "br"]
    assert content_codings(["gzip", " BR "]) == ["gzip", "br"]
    assert decompress(body, content_codings(["gzip, br"]), CAP) == TEXT


def test_concatenated_gzip_members() -> None:
    body = gzip.compress(TEXT[:100]) + gzip.compress(TEXT[100:])
    assert decompress(body, ["gzip"], CAP) == TEXT


def test_truncated_body_decodes_its_prefix() -> None:
    body = gzip.compress(TEXT, compresslevel=1)
    out = decompress(body[: len(body) // 2], ["gzip"], CAP)
    assert 0 < len(out) < len(TEXT)
    assert TEXT.startswith(out)


@pytest.mark.parametrize(
    ("coding", "body"),
    [
        ("gzip", b"this is not gzip at all"),
        ("br", b"\xff\xff\xff not brotli"),
        ("zstd", b"\x28\xb5\x2f\xfd garbage garbage"),
        ("compress", b"anything"),
    ],
)
def test_broken_data_is_bad_content(coding: str, body: bytes) -> None:
    with pytest.raises(BadContent):
        decompress(body, [coding], CAP)


def _gzip_bomb(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(1024 * 1024)
    parts = [c.compress(zeros) for _ in range(size // len(zeros))]
    return b"".join(parts) + c.flush()


def test_gzip_bomb_stops_at_cap_with_bounded_memory() -> None:
    bomb = _gzip_bomb(256 * 1024 * 1024)  # 256 MiB of zeros in ~250 KB
    assert len(bomb) < 300_000
    tracemalloc.start()
    try:
        with pytest.raises(DecompressionBomb):
            decompress(bomb, ["gzip"], CAP)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * CAP, f"peak {peak} bytes while decoding a bomb with a {CAP}-byte cap"


@pytest.mark.parametrize(
    ("coding", "encode"),
    [("br", brotli.compress), ("zstd", zstandard.ZstdCompressor().compress), ("deflate", zlib.compress)],
)
def test_other_bombs(coding: str, encode: object) -> None:
    assert callable(encode)
    with pytest.raises(DecompressionBomb):
        decompress(encode(bytes(8 * CAP)), [coding], CAP)


def test_exactly_at_cap_is_fine() -> None:
    assert len(decompress(gzip.compress(bytes(CAP)), ["gzip"], CAP)) == CAP
    with pytest.raises(DecompressionBomb):
        decompress(gzip.compress(bytes(CAP + 1)), ["gzip"], CAP)


BIG_CAP = 20 * 1024 * 1024  # above the 8 MiB held while a gzip/deflate body's size is unknown


@pytest.mark.parametrize(("coding", "encode"), [("gzip", gzip.compress), ("deflate", _deflate_raw)])
def test_a_body_past_what_is_held_but_under_the_cap_decodes_whole(coding: str, encode: object) -> None:
    body = bytes(range(256)) * (12 * 1024 * 1024 // 256)
    assert callable(encode)
    assert decompress(encode(body), [coding], BIG_CAP) == body
    two = gzip.compress(body[: 6 * 1024 * 1024]) + gzip.compress(body[6 * 1024 * 1024 :])
    assert decompress(two, ["gzip"], BIG_CAP) == body  # members past the held part are counted too
    cut = encode(body)[: len(encode(body)) // 2]
    assert body.startswith(decompress(cut, [coding], BIG_CAP))  # a cut body: the prefix that arrived


def test_a_big_bomb_is_found_without_holding_its_output() -> None:
    bomb = gzip.compress(b"\0" * (BIG_CAP + 1))
    members = gzip.compress(b"\0" * (BIG_CAP // 2)) * 3  # each member fits, together they do not
    for data in (bomb, members):
        tracemalloc.start()
        try:
            with pytest.raises(DecompressionBomb):
                decompress(data, ["gzip"], BIG_CAP)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 12 * 1024 * 1024  # the 8 MiB held and a counting step, not the 20 MiB cap


def test_a_body_that_inflates_like_a_bomb_but_fits_the_cap_decodes_whole() -> None:
    body = b"<p>" + bytes(12 * 1024 * 1024) + b"</p>"  # ~1000x, past the 8 MiB held: counted, then decoded whole
    assert decompress(gzip.compress(body), ["gzip"], BIG_CAP) == body
    two = gzip.compress(body[:100]) + gzip.compress(body[100:])
    assert decompress(two, ["gzip"], BIG_CAP) == body
