"""Content-Encoding: every coding decodes, stacked codings unwind in order, bombs stop at the cap."""

from __future__ import annotations

import gzip
import random
import tracemalloc
import zlib

import brotli
import pytest
import zstandard

from webtrawl import decompress as dz
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


def _peak_refusing(data: bytes) -> int:
    """The most memory Python held while ``data`` was refused as a bomb at BIG_CAP."""
    tracemalloc.start()
    try:
        with pytest.raises(DecompressionBomb):
            decompress(data, ["gzip"], BIG_CAP)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _claiming(data: bytes, size: int) -> bytes:
    """``data`` (a gzip stream) with its last member's trailer saying it decodes to ``size`` bytes."""
    return data[:-4] + size.to_bytes(4, "little")


def test_a_big_bomb_is_found_without_holding_its_output() -> None:
    bomb = gzip.compress(b"\0" * (BIG_CAP + 1))
    members = gzip.compress(b"\0" * (BIG_CAP // 2)) * 3  # each member fits, together they do not
    liar = _claiming(gzip.compress(b"\0" * (2 * BIG_CAP)), 1)  # counted past the cap: its trailer is never read
    for data in (bomb, members, liar):  # the last two are counted: their trailers do not tell
        assert _peak_refusing(data) < 12 * 1024 * 1024  # the 8 MiB held and a counting step, not the 20 MiB cap


def test_a_body_that_inflates_like_a_bomb_but_fits_the_cap_decodes_whole() -> None:
    body = b"<p>" + bytes(12 * 1024 * 1024) + b"</p>"  # ~1000x, past the 8 MiB held: counted, then decoded whole
    assert decompress(gzip.compress(body), ["gzip"], BIG_CAP) == body
    two = gzip.compress(body[:100]) + gzip.compress(body[100:])
    assert decompress(two, ["gzip"], BIG_CAP) == body


def _zlib_held_first(data: bytes, cap: int, wbits: int) -> bytes:
    """decompress._zlib before the probe: the first member held up to the held size whatever its ratio."""
    limit = min(cap, dz._HELD)
    out: list[bytes] = []
    size = 0
    tail = data
    while True:
        d = dz.ZLIB.decompressobj(wbits)
        chunk = d.decompress(tail, limit + 1 - size)
        size += len(chunk)
        out.append(chunk)
        if size > limit:
            break
        tail = d.unused_data
        if not (d.eof and tail.startswith(dz.GZIP_MAGIC)):
            return b"".join(out)
    if size > cap:
        raise dz._bomb(cap)
    dz._count_on(d, d.unconsumed_tail, size, cap, wbits)
    return dz._members(data, wbits)


def _verdict(fn: object, data: bytes, cap: int, wbits: int) -> object:
    assert callable(fn)
    try:
        return fn(data, cap, wbits)
    except DecompressionBomb:
        return "bomb"
    except dz.ERRORS:
        return "broken"


@pytest.mark.parametrize("seed", range(40))
def test_the_ratio_probe_changes_no_verdict(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bodies that inflate like bombs or not, in one or more members, cut or with a flipped byte, under caps below,
    at and past the held size: the probe gives what holding the first member gave (constants scaled down)."""
    monkeypatch.setattr(dz, "_PROBE", 1024)
    monkeypatch.setattr(dz, "_HELD", 8 * 1024)
    monkeypatch.setattr(dz, "_COUNT_STEP", 1024)
    monkeypatch.setattr(dz, "_BOMB_RATIO", 10)  # a 1 KiB probe's input is mostly headers
    monkeypatch.setattr(dz, "_TRUST_TRAILER", False)  # the probe alone (the trailer's verdicts: tests above)
    rng = random.Random(seed)
    parts = [bytes(rng.choice([10, 900, 3000, 20_000, 90_000])) for _ in range(rng.randint(1, 3))]
    parts += [rng.randbytes(rng.choice([10, 2000, 12_000])) for _ in range(rng.randint(0, 2))]
    rng.shuffle(parts)
    wbits = rng.choice([31, 15, -15])
    members = []
    for part in parts:
        c = zlib.compressobj(6, zlib.DEFLATED, wbits)
        members.append(c.compress(part) + c.flush())
    data = b"".join(members) if wbits == 31 else members[0]  # only gzip has members
    if seed % 3 == 1:
        data = data[: rng.randint(1, len(data))]
    elif seed % 3 == 2:
        at = rng.randrange(len(data))
        data = data[:at] + bytes([data[at] ^ 0x55]) + data[at + 1 :]
    for cap in (1000, 1024, 5000, 8 * 1024, 8 * 1024 + 1, 30_000, 200_000):
        assert _verdict(dz._zlib, data, cap, wbits) == _verdict(_zlib_held_first, data, cap, wbits)


def test_a_bomb_is_counted_without_holding_even_its_first_mib() -> None:
    bomb = gzip.compress(b"\0" * (BIG_CAP + 1))
    for data in (bomb, _claiming(gzip.compress(b"\0" * (2 * BIG_CAP)), 1)):  # told by its trailer, or counted
        assert _peak_refusing(data) < 4 * 1024 * 1024  # the probe, or a counting step or two: not the 8 MiB held


def _fits_but_starts_like_a_bomb() -> bytes:
    """1000:1 in its first MiBs, then 100 KB that do not compress: 4 MiB in all, but its bytes could inflate past
    the cap."""
    return bytes(4 * 1024 * 1024) + random.Random(1).randbytes(100_000)


@pytest.mark.parametrize("trust", [True, False])
def test_a_trailer_that_says_past_the_cap_decides_a_stream_that_starts_like_a_bomb(
    trust: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Believed, the trailer refuses the stream at once; counted instead, the stream fits and its trailer is found
    to lie at its end. The only verdict the trailer changes (a true trailer past the cap is a bomb either way)."""
    monkeypatch.setattr(dz, "_TRUST_TRAILER", trust)
    body = _fits_but_starts_like_a_bomb()
    lying = _claiming(gzip.compress(body), BIG_CAP + 1)
    with pytest.raises(DecompressionBomb if trust else BadContent):
        decompress(lying, ["gzip"], BIG_CAP)
    assert decompress(zlib.compress(body), ["deflate"], BIG_CAP) == body  # a zlib trailer holds no size


def test_a_trailer_that_says_too_little_does_not_let_a_bomb_through() -> None:
    bomb = gzip.compress(b"\0" * (2 * BIG_CAP))  # counted past the cap before its trailer is checked
    for size in (0, 1000, BIG_CAP, 2 * BIG_CAP + 2**32):  # small, at the cap, wrapped past 4 GiB
        with pytest.raises(DecompressionBomb):
            decompress(_claiming(bomb, size % 2**32), ["gzip"], BIG_CAP)


def test_a_trailer_is_taken_only_for_what_the_body_could_hold() -> None:
    """A trailer that claims more than the stream's bytes could inflate to (deflate's 1032:1) is not believed: the
    stream is decoded, and found broken by its trailer."""
    body = _fits_but_starts_like_a_bomb()
    fits = gzip.compress(body)
    assert len(fits) * 1032 > BIG_CAP
    assert decompress(fits, ["gzip"], BIG_CAP) == body  # its true trailer: decoded whole
    with pytest.raises(BadContent):
        decompress(_claiming(fits, min(2**32 - 1, len(fits) * 1033)), ["gzip"], BIG_CAP)
