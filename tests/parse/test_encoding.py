"""Which encoding a page is read in: BOM > header > meta > detection > default, as process_page records it."""

from __future__ import annotations

import codecs
import random

import pytest

from webtrawl.formats.encoding import _valid_utf8, choose_encoding, codec_for, content_type_of, prescan_meta
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


# A UTF-8 page with one character cut in half (a teaser cut by a byte count, as PHP's substr does): one invalid
# sequence among many valid ones does not make the page another encoding.
_FRENCH = "<p>Une recette de crème brûlée à la française, très appréciée. Voilà le secret du caramel doré.</p>" * 5
_CUT_TEASER = "<p>Lire aussi : « Les crêpes de la Chandeleur, une tradition fran".encode() + "ç".encode()[:1] + b"</p>"
_STRAY_BYTE_PAGE = f"<html><head><title>Crème brûlée</title></head><body>{_FRENCH}".encode() + _CUT_TEASER


@pytest.mark.parametrize("content_type", ["text/html; charset=UTF-8", "text/html", "text/html; charset=ISO-8859-1"])
def test_a_utf8_page_with_one_stray_byte_is_read_as_utf8(content_type: str) -> None:
    rec = _run(_STRAY_BYTE_PAGE + b"</body></html>", content_type)
    assert (rec.encoding, rec.title) == ("utf-8", "Crème brûlée")


@pytest.mark.parametrize("declared", ['<meta charset="utf-8">', ""])
def test_a_declared_utf8_page_with_few_characters_and_a_stray_byte_stays_utf8(declared: str) -> None:
    # Three curly quotes and two Latin-1 bytes: too few characters for a ratio to tell, so a UTF-8 declaration
    # stands (as in a browser) rather than detection's guess (mac-latin2); a short page whose every non-ASCII byte
    # is invalid is still legacy text.
    text = "Some English text about things. " * 40 + "It\u2019s " * 3
    body = f"<html><head>{declared}<title>t</title></head><body>{text}".encode() + b"caf\xe9 " * 2 + b"</body></html>"
    assert choose_encoding(body, "text/html; charset=utf-8")[:2] == ("utf-8", "header")
    if declared:
        assert choose_encoding(body, "text/html")[:2] == ("utf-8", "meta")
    short = _html("Привет").replace(RUSSIAN, "Привет").encode("windows-1251")
    assert choose_encoding(short, "text/html; charset=utf-8")[1] != "header"


@pytest.mark.parametrize(
    ("text", "codec"),
    [(RUSSIAN, "windows-1251"), ("日本語のページです。東京の天気とニュース。" * 20, "euc_jp"), (_FRENCH, "cp1252")],
)
def test_a_utf8_header_on_legacy_bytes_is_still_disproved(text: str, codec: str) -> None:
    rec = _run(_html("t").replace(RUSSIAN, text).encode(codec), "text/html; charset=utf-8")
    assert rec.encoding != "utf-8"


@pytest.mark.parametrize("content_type", ["text/html", "text/html; charset=utf-8", "text/html; charset=ISO-8859-1"])
def test_a_meta_charset_the_bytes_disprove_is_skipped_like_a_header(content_type: str) -> None:
    # An old template's <meta charset=iso-8859-1> on a site that now serves UTF-8, and a <meta charset=utf-8> on
    # windows-1251 bytes: the same proof that skips a header skips the meta tag.
    utf8 = _html("Grüße aus München", '<meta http-equiv="Content-Type" content="text/html; charset=iso-8859-1">')
    rec = _run(utf8.encode("utf-8"), content_type)
    assert (rec.encoding, rec.title) == ("utf-8", "Grüße aus München")
    if "iso" not in content_type.lower():  # (a Latin-1 header on windows-1251 bytes wins, as in a browser)
        rec = _run(_html("Погода в Москве", '<meta charset="utf-8">').encode("windows-1251"), content_type)
        assert (rec.encoding, rec.title) == ("cp1251", "Погода в Москве")


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


@pytest.mark.parametrize("label", ["undefined", "idna", "punycode", "unicode_escape", "raw-unicode-escape"])
def test_python_codecs_that_are_no_page_encoding_are_ignored(label: str) -> None:
    # "charset=undefined" (a template's JavaScript variable) made the parser raise: Python has an "undefined" codec
    # that fails every decode, and "idna"/"punycode" fail on any non-ASCII byte; the escape codecs rewrite "\\x41".
    body = _html("Заголовок \\x41", '<meta charset="utf-8">').encode("utf-8")
    rec = _run(body, f"text/html; charset={label}")
    assert (rec.encoding, rec.encoding_source, rec.title) == ("utf-8", "meta", "Заголовок \\x41")
    assert codec_for(label) is None
    rec = _run(_html("Заголовок", f'<meta charset="{label}">').encode("utf-8"))
    assert (rec.encoding, rec.title) == ("utf-8", "Заголовок")


def test_web_label_mapping() -> None:
    assert codec_for("ISO-8859-1") == "cp1252"  # browsers decode latin-1 labels as windows-1252
    assert codec_for("us-ascii") == "cp1252"
    assert codec_for("gb2312") == "gb18030"
    assert codec_for(" 'UTF8' ") == "utf-8"
    assert codec_for("nonsense") is None
    rec = _run(b"<title>\x80 price</title>", "text/html; charset=iso-8859-1")
    assert rec.title == "€ price"


# WHATWG Encoding Standard labels that Python's codec registry does not know (or reads as another encoding), each
# with a short page in that encoding: too little text for detection to tell, so only the label can.
_WHATWG_ONLY_LABELS = [
    ("windows-874", "cp874", "ภาษาไทย"),
    ("dos-874", "cp874", "หน้าแรก"),
    ("iso-8859-8-i", "iso8859-8", "כותרת"),
    ("logical", "iso8859-8", "שלום"),
    ("x-euc-jp", "euc_jp", "日本"),
    ("windows-949", "cp949", "한국"),
    ("x-cp1251", "cp1251", "Дом"),
    ("koi8", "koi8-r", "Дом"),
    ("x-mac-cyrillic", "mac-cyrillic", "Дом"),
    ("csisolatin9", "iso8859-15", "Déjà €"),
    ("mac", "mac-roman", "Café"),
]


@pytest.mark.parametrize(("label", "codec", "title"), _WHATWG_ONLY_LABELS, ids=[c[0] for c in _WHATWG_ONLY_LABELS])
def test_whatwg_labels_python_does_not_know_are_obeyed(label: str, codec: str, title: str) -> None:
    body = f"<html><head><title>{title}</title></head><body>{title}</body></html>".encode(codec)
    rec = _run(body, f"text/html; charset={label}")
    assert (rec.encoding, rec.encoding_source, rec.title) == (codec_for(codec), "header", title)
    meta = f"<html><head><meta charset={label}><title>{title}</title></head></html>".encode(codec)
    assert (_run(meta).encoding_source, _run(meta).title) == ("meta", title)


def test_every_whatwg_label_maps_to_its_encoding() -> None:
    # The Encoding Standard's label table, by the Python codec that decodes each encoding as browsers do
    # ("replacement" and x-user-defined aside).
    table = {
        "cp874": "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874",
        "cp932": "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
        "cp949": "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 ksc_5601 "
        "windows-949",
        "euc_jp": "cseucpkdfmtjapanese euc-jp x-euc-jp",
        "gb18030": "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk gb18030",
        "big5hkscs": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
        "cp1252": "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 iso8859-1 iso88591 "
        "iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 x-cp1252",
        "cp1251": "cp1251 windows-1251 x-cp1251",
        "cp1254": "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 l5 latin5 windows-1254",
        "iso8859-8": "csiso88598e csiso88598i csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-8859-8-i "
        "iso-ir-138 iso8859-8 iso88598 iso_8859-8 logical visual",
        "iso8859-6": "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 iso-8859-6 iso-8859-6-e "
        "iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6",
        "iso8859-7": "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 iso8859-7 iso88597 "
        "iso_8859-7 sun_eu_greek",
        "iso8859-15": "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
        "koi8-r": "cskoi8r koi koi8 koi8-r koi8_r",
        "koi8-u": "koi8-ru koi8-u",
        "mac-roman": "csmacintosh mac macintosh x-mac-roman",
        "mac-cyrillic": "x-mac-cyrillic x-mac-ukrainian",
        "utf-8": "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8",
        "utf-16-le": "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le",
        "utf-16-be": "unicodefffe utf-16be",
    }
    expected = {label: codec for codec, labels in table.items() for label in labels.split()}
    assert {label: codec_for(label) for label in expected} == expected


_LATE = [
    ("windows-874", "cp874", "ภาษาไทย"),
    ("iso-8859-8-i", "iso8859-8", "שלום עולם"),
    ("x-euc-jp", "euc_jp", "日本語"),
]


@pytest.mark.parametrize(("label", "codec", "title"), _LATE, ids=[c[0] for c in _LATE])
def test_a_meta_charset_in_the_head_after_the_first_kilobyte_is_obeyed(label: str, codec: str, title: str) -> None:
    # Browsers obey a <meta charset> anywhere in the head (Chromium scans on until the body; the HTML spec's parser
    # changes the encoding when it meets one); detection cannot tell these short pages apart.
    scripts = "<script>var config = {a: 1, b: 2, c: 'x'};</script>\n" * 30
    html = f"<html><head>{scripts}<meta charset={label}><title>{title}</title></head><body>{title}</body></html>"
    rec = _run(html.encode(codec))
    assert (rec.encoding, rec.encoding_source, rec.title) == (codec_for(codec), "meta", title)
    # valid UTF-8 still wins over a late meta tag, and a meta tag in the body is not the page's
    assert _run(html.encode("utf-8")).encoding == "utf-8"
    in_body = html.replace(f"<meta charset={label}>", "").replace("<body>", f"<body><meta charset={label}>")
    assert _run(in_body.encode(codec)).encoding_source == "detected"


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
    assert not _valid_utf8(bad)
    # ...and one stray byte among 80,000 characters leaves the page UTF-8 (test_a_utf8_page_with_one_stray_byte...)
    assert choose_encoding(bad, "text/html; charset=utf-8") == ("utf-8", "header", 0)
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


# WHATWG URL: the query of an http(s) link is encoded in the document's encoding (the path always in UTF-8); what
# that encoding cannot hold ("&#12484;" on a latin-1 page) becomes "&#N;", percent-encoded. A browser on these
# pages requests exactly these URLs.
_QUERY_CASES = [
    ("shift_jis", "/検索?q=日本&n=1", "http://site.example/%E6%A4%9C%E7%B4%A2?q=%93%FA%96%7B&n=1"),
    ("windows-1251", "find?q=Москва", "http://site.example/dir/find?q=%CC%EE%F1%EA%E2%E0"),
    ("gb18030", "http://other.example/s?wd=中文#frag", "http://other.example/s?wd=%D6%D0%CE%C4"),
    ("iso-8859-1", "?q=café &#12484;", "http://site.example/dir/page.html?q=caf%E9%20%26%2312484%3B"),
    ("euc-kr", "//other.example/?q=한국", "http://other.example/?q=%C7%D1%B1%B9"),
]


@pytest.mark.parametrize(("charset", "href", "url"), _QUERY_CASES, ids=[c[0] for c in _QUERY_CASES])
def test_link_queries_are_encoded_in_the_page_encoding(charset: str, href: str, url: str) -> None:
    body = f"<html><head><title>t</title></head><body><a href='{href}'>x</a></body></html>".encode(charset)
    out = process_page(make_page(body, content_type=f"text/html; charset={charset}"), make_ctx())
    assert [n.url for n in out.new_urls] == [url]


def test_a_utf16_page_and_base_href_use_utf8_and_the_page_encoding() -> None:
    html = "<html><head><base href='/b/?q=été'></head><body><a href='?x=été'>x</a><a href='#top'>y</a></body></html>"
    out = process_page(make_page(codecs.BOM_UTF16_LE + html.encode("utf-16-le")), make_ctx())
    assert [n.url for n in out.new_urls] == [
        "http://site.example/b/?x=%C3%A9t%C3%A9",
        "http://site.example/b/?q=%C3%A9t%C3%A9",
    ]
    out = process_page(make_page(html.encode("cp1252"), content_type="text/html; charset=windows-1252"), make_ctx())
    assert [n.url for n in out.new_urls] == ["http://site.example/b/?x=%E9t%E9", "http://site.example/b/?q=%E9t%E9"]


_CONTENT_TYPES = [  # (Content-Type values in order, what a browser makes of them: Fetch's "extract a MIME type")
    (["text/html; charset=utf-8"], "text/html; charset=utf-8"),
    (["text/plain", "text/html; charset=windows-1251"], "text/html; charset=windows-1251"),
    (["text/html; charset=windows-1251", "text/html"], "text/html; charset=windows-1251"),
    (["text/html; charset=koi8-r", "text/html; charset=windows-1251"], "text/html; charset=windows-1251"),
    (["text/html; charset=koi8-r", "text/plain", "text/html"], "text/html"),
    (["text/html, */*"], "text/html"),
    (["text/plain, text/html;charset=windows-1251"], "text/html; charset=windows-1251"),
    (["text/html", "nonsense"], "text/html"),
    (["nonsense", ""], ""),
]


@pytest.mark.parametrize(("values", "seen"), _CONTENT_TYPES)
def test_content_type_of_several_values_is_the_last_valid_one(values: list[str], seen: str) -> None:
    assert content_type_of(values) == seen


def test_a_page_sent_with_two_content_types_is_read_as_the_last() -> None:
    """A server's default ``text/plain`` and the application's own ``text/html; charset=windows-1251``: browsers show
    an HTML page in windows-1251. The first value made it a text file (no title, no links)."""
    body = _html("Заголовок").replace("</body>", "<a href='/next'>x</a></body>").encode("cp1251")
    headers = [("Content-Type", "text/html; charset=windows-1251")]
    out = process_page(make_page(body, content_type="text/plain", headers=headers), make_ctx())
    rec = out.record
    assert (rec.content_type, rec.title, rec.encoding, rec.encoding_source) == (
        "text/html",
        "Заголовок",
        "cp1251",
        "header",
    )
    assert [n.url for n in out.new_urls] == ["http://site.example/next"]


def test_an_undeclared_western_page_that_fits_windows_1252_as_well_as_another_is_read_as_it() -> None:
    """charset-normalizer ranks windows-1250 first among candidates that fit a short French page equally well, and
    the page's text came out as 'Café crčme brűlée' instead of what a browser shows."""
    text = "Café crème brûlée. Naïve résumé à la française, les élèves étudient à l'école. " * 2
    rec = _run(f"<html><head><title>Carte</title></head><body><p>{text}</p></body></html>".encode("cp1252"))
    assert (rec.encoding, rec.encoding_source) == ("cp1252", "detected")
