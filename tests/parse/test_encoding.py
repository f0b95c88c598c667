"""Which encoding a page is read in: BOM > header > meta > detection > default, as process_page records it."""

from __future__ import annotations

import codecs
import random

import pytest

from webtrawl.formats.encoding import _valid_utf8, choose_encoding, codec_for, prescan_meta
from webtrawl.parse import process_page
from webtrawl.store import PageRecord

from .helpers import make_ctx, make_page

RUSSIAN = "Привет, мир! Это длинный русский текст о погоде, новостях и политике в Москве. " * 20  # noqa: RUF001


def _html(title: str, head_extra: str = "") -> str:
    head = f"<head>{head_extra}<title>{title}</title></head>"
    return f"<!doctype html><html>{head}<body><p>{RUSSIAN}</p></body></html>"


def _run(body: bytes, content_type: str = "text/html") -> PageRecord:
    return process_page(make_page(body, content_type=content_type), make_ctx()).record


def test_bom_beats_header_and_meta() -> None:
    body = codecs.BOM_UTF8 + _html("Заголовок", '<meta charset="windows-1251">').encode("utf-8")
    rec = _run(body, "text/html; charset=iso-8859-5")
    assert (rec.encoding, rec.encoding_source, rec.title) == ("utf-8", "bom", "Заголовок")


def test_utf16_bom() -> None:
    body = codecs.BOM_UTF16_LE + _html("Заголовок").encode("utf-16-le")
    rec = _run(body, "text/html")
    assert (rec.encoding_source, rec.title) == ("bom", "Заголовок")


def test_header_beats_meta() -> None:
    body = _html("Заголовок", '<meta charset="utf-8">').encode("windows-1251")
    rec = _run(body, 'text/html; charset="Windows-1251"')
    assert (rec.encoding, rec.encoding_source, rec.title) == ("cp1251", "header", "Заголовок")


def test_a_utf8_header_that_the_bytes_disprove_is_skipped() -> None:
    # The header says UTF-8 but the bytes are windows-1251: the meta tag (or detection) tells the truth.
    body = _html("Заголовок", '<meta charset="windows-1251">').encode("windows-1251")
    rec = _run(body, "text/html; charset=utf-8")
    assert (rec.encoding, rec.encoding_source, rec.title) == ("cp1251", "meta", "Заголовок")
    body = _html("Заголовок страницы на русском языке").encode("windows-1251")
    rec = _run(body, "text/html; charset=utf-8")
    assert (rec.encoding, rec.encoding_source, rec.title) == (
        "cp1251",
        "detected",
        "Заголовок страницы на русском языке",
    )


def test_a_latin1_default_header_on_utf8_bytes_is_skipped() -> None:
    body = _html("Grüße aus München", '<meta charset="utf-8">').encode("utf-8")
    rec = _run(body, "text/html; charset=ISO-8859-1")
    assert (rec.encoding, rec.encoding_source, rec.title) == ("utf-8", "meta", "Grüße aus München")
    ascii_only = b"<html><head><title>plain title</title></head><body>plain text</body></html>"
    assert _run(ascii_only, "text/html; charset=ISO-8859-1").encoding_source == "header"
    # a UTF-8 cut in the middle of a character (truncated body) still proves the header right
    cut = _html("Привет").encode("utf-8")[:-1] + "Ж".encode()[:1]
    assert _run(cut, "text/html; charset=utf-8").encoding_source == "header"


def test_meta_charset_and_http_equiv() -> None:
    body = _html("Заголовок", '<meta charset="windows-1251">').encode("windows-1251")
    rec = _run(body)
    assert (rec.encoding, rec.encoding_source, rec.title) == ("cp1251", "meta", "Заголовок")
    body = _html("Заголовок", '<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">').encode("koi8-r")
    rec = _run(body)
    assert (rec.encoding, rec.encoding_source, rec.title) == ("koi8-r", "meta", "Заголовок")


def test_meta_prescan_ignores_comments_and_stops_at_1024_bytes() -> None:
    assert prescan_meta(b'<!-- <meta charset="koi8-r"> --><meta charset="cp1251">') == "cp1251"
    assert prescan_meta(b"<html>" + b" " * 1100 + b'<meta charset="koi8-r">') is None
    assert prescan_meta(b'<meta name="x" content="charset=koi8-r">') is None  # needs http-equiv
    assert prescan_meta(b'<meta charset="utf-16">') == "utf-8"  # ASCII bytes cannot be UTF-16


def test_unknown_or_non_text_labels_fall_through() -> None:
    body = _html("Заголовок", '<meta charset="windows-1251">').encode("windows-1251")
    for label in ("x-no-such-charset", "base64", "rot13", "utf-7"):
        rec = _run(body, f"text/html; charset={label}")
        assert (rec.encoding, rec.encoding_source, rec.title) == ("cp1251", "meta", "Заголовок")


def test_web_label_mapping() -> None:
    assert codec_for("ISO-8859-1") == "cp1252"  # browsers decode latin-1 labels as windows-1252
    assert codec_for("us-ascii") == "cp1252"
    assert codec_for("gb2312") == "gb18030"
    assert codec_for(" 'UTF8' ") == "utf-8"
    assert codec_for("nonsense") is None
    rec = _run(b"<title>\x80 price</title>", "text/html; charset=iso-8859-1")
    assert rec.title == "€ price"


def test_undeclared_utf8_is_detected() -> None:
    rec = _run(_html("Заголовок").encode("utf-8"))
    assert (rec.encoding, rec.encoding_source, rec.title) == ("utf-8", "detected", "Заголовок")


def test_undeclared_legacy_encoding_is_detected() -> None:
    rec = _run(_html("Погода в Москве").encode("windows-1251"))
    assert rec.encoding_source == "detected"
    assert rec.title == "Погода в Москве"


def test_default_when_nothing_else_answers() -> None:
    # Bytes that are neither UTF-8 nor anything charset-normalizer recognises: UTF-8 with replacement.
    body = b"<title>x</title>" + bytes(range(256)) * 4
    assert choose_encoding(body, "text/html") == ("utf-8", "default", 0)
    rec = _run(body)
    assert (rec.encoding, rec.encoding_source, rec.title) == ("utf-8", "default", "x")
    assert choose_encoding(b"plain ascii", "") == ("utf-8", "detected", 0)


@pytest.mark.parametrize("content_type", ["text/html;charset=UTF-8", "text/html; charset = utf-8 ; x=y"])
def test_header_parameter_spelling(content_type: str) -> None:
    assert choose_encoding(b"<p>x</p>", content_type)[:2] == ("utf-8", "header")


@pytest.mark.parametrize("shift", range(4))
def test_utf8_is_checked_across_slices_as_a_whole(shift: int) -> None:
    # Characters of 2-4 bytes straddle the check's slice edges (4 KiB) at every offset; one bad byte far past the
    # first slice, and a character cut at the end, are judged as a decode of the whole body would judge them.
    text = "x" * shift + "é\u2019𝄞中 " * 20_000
    body = text.encode("utf-8")
    assert choose_encoding(body, "text/html; charset=utf-8") == ("utf-8", "header", 0)
    assert choose_encoding(body, "text/html") == ("utf-8", "detected", 0)
    bad = body[:70_001] + b"\xff" + body[70_002:]
    assert choose_encoding(bad, "text/html; charset=utf-8")[1] != "header"
    cut = body[:-1]  # "𝄞中 " ends the text: dropping the space leaves whole characters; one more byte cuts "中"
    assert choose_encoding(cut[:-1], "text/html; charset=utf-8") == ("utf-8", "header", 0)
    assert _valid_utf8(cut[:-1]) and not _valid_utf8(cut[:-1], cut_ok=False)  # detection wants it whole


@pytest.mark.parametrize("seed", range(30))
def test_utf8_check_equals_a_whole_decode(seed: int) -> None:
    rng = random.Random(seed)
    pieces = ["a", "é", "\u2019", "𝄞", "中", " "]
    body = "".join(rng.choices(pieces, k=rng.randint(0, 12_000))).encode("utf-8")
    if seed % 2 and body:  # one stray byte somewhere: a lone continuation, a lead byte, or one never valid
        at = rng.randrange(len(body))
        body = body[:at] + rng.choice([b"\x80", b"\xc3", b"\xe2\x80", b"\xff"]) + body[at:]
    try:
        body.decode("utf-8")
        whole = True
    except UnicodeDecodeError:
        whole = False
    assert _valid_utf8(body, cut_ok=False) == whole
