"""Which character encoding an HTML body is in, in the order a browser decides it.

BOM > Content-Type charset > ``<meta>`` prescan of the first 1024 bytes (HTML spec 13.2.3.2) > UTF-8 if the bytes
are UTF-8 > a ``<meta>`` later in the head (browsers obey it too) > detection > UTF-8, except that a header or meta
charset that the bytes prove wrong is skipped: UTF-8 named for bytes that are not UTF-8, or Latin-1/windows-1252 (a
common server default, and old templates' meta tag) for non-ASCII bytes that are valid UTF-8. Bytes that are UTF-8
but for a few stray ones (a character cut in half) count as UTF-8: one bad byte does not make a page another
encoding. A crawler wants the text the author wrote; the browser's mojibake helps nobody. Detection first tries
UTF-8 (a body that decodes as UTF-8 is UTF-8 for every practical purpose, and the check costs microseconds) and only
then asks charset-normalizer about a bounded prefix, which costs milliseconds. Labels are mapped the WHATWG way where
Python's codec of the same name would decode differently (``iso-8859-1`` is really windows-1252 on the web) or does
not exist (``windows-874``, ``iso-8859-8-i``); labels that are unknown to both or not text codecs are ignored."""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence

import charset_normalizer

_PRESCAN_BYTES = 1024
_LATE_META_BYTES = 64 * 1024  # how far into a head a late meta tag is looked for
_BODY_RE = re.compile(rb"<body[\s>/]", re.I)
_DETECT_BYTES = 32 * 1024
# Valid multi-byte UTF-8 characters per invalid sequence from which bytes are UTF-8 with a few stray bytes (a
# character cut in half by a teaser's byte count, a Latin-1 byte in a UTF-8 template). Legacy text read as UTF-8
# gives at most ~0.5 (EUC-JP; windows-1251, Latin-1: ~0); a UTF-8 page with one cut character, hundreds.
_STRAY_RATIO = 4
_STRAY_BUDGET = 8  # invalid sequences counted before a body that cannot outweigh them is given up as legacy text
_UTF8_SLICE = 4 * 1024  # its str (up to 16 KiB) stays in L1/L2; smaller slices cost more calls than they save
_utf_8_decode = codecs.utf_8_decode
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_BE, "utf-16-be"), (codecs.BOM_UTF16_LE, "utf-16-le"))
# WHATWG Encoding Standard labels that Python's codec registry reads as a narrower encoding (``iso-8859-1`` is
# really windows-1252 on the web) or does not know at all (``windows-874``, ``iso-8859-8-i``, ``x-cp1251``...): an
# unknown label would be ignored and a short page left to detection, which guesses wrong (Thai read as Shift_JIS).
_WEB_ALIASES = {
    **dict.fromkeys(("iso8859-1", "iso88591", "ascii", "latin-1", "x-cp1252"), "cp1252"),
    **dict.fromkeys(("iso8859-9", "iso88599", "x-cp1254"), "cp1254"),
    **dict.fromkeys(("iso8859-11", "iso885911", "tis-620", "windows-874", "dos-874"), "cp874"),
    **dict.fromkeys(("gb2312", "gbk", "x-gbk", "gb_2312", "gb_2312-80", "csgb2312"), "gb18030"),
    **dict.fromkeys(("shift_jis", "x-sjis", "windows-31j"), "cp932"),
    **dict.fromkeys(("euc_kr", "cseuckr", "csksc56011987", "iso-ir-149", "ks_c_5601-1989", "ksc_5601"), "cp949"),
    "windows-949": "cp949",
    **dict.fromkeys(("big5", "cn-big5", "x-x-big5"), "big5hkscs"),
    **dict.fromkeys(("x-euc-jp", "cseucpkdfmtjapanese"), "euc_jp"),
    **{f"x-cp125{n}": f"cp125{n}" for n in range(9)},
    **{f"iso8859{n}": f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15)},
    **dict.fromkeys(("iso-8859-6-e", "iso-8859-6-i", "csiso88596e", "csiso88596i"), "iso8859-6"),
    **dict.fromkeys(("iso-8859-8-e", "iso-8859-8-i", "csiso88598e", "csiso88598i", "logical", "visual"), "iso8859-8"),
    "sun_eu_greek": "iso8859-7",
    "csisolatin9": "iso8859-15",
    **dict.fromkeys(("koi", "koi8"), "koi8-r"),
    "koi8-ru": "koi8-u",
    **dict.fromkeys(("mac", "csmacintosh", "x-mac-roman"), "mac-roman"),
    **dict.fromkeys(("x-mac-cyrillic", "x-mac-ukrainian"), "mac-cyrillic"),
    **dict.fromkeys(("unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "x-unicode20utf8"), "utf-8"),
    # UTF-16 without a byte order is little-endian on the web
    **dict.fromkeys(("utf-16", "unicode", "unicodefeff", "csunicode", "ucs-2", "iso-10646-ucs-2"), "utf-16-le"),
    "unicodefffe": "utf-16-be",
}
# Labels no page is decoded with: UTF-7 and x-user-defined (WHATWG), and Python codecs that are no character set of
# a document: "undefined" fails every decode (and "charset=undefined" is on the web, from template variables),
# idna/punycode fail on any non-ASCII byte, the escape codecs would rewrite "\\x41" in the text.
_REFUSED = frozenset(
    {"utf-7", "x-user-defined", "replacement", "undefined", "idna", "punycode", "unicode-escape", "raw-unicode-escape"}
)
_COMMENT_RE = re.compile(rb"<!--.*?(?:-->|\Z)", re.S)
_META_RE = re.compile(rb"<meta[\s/]([^>]*)", re.I)
_ATTR_RE = re.compile(rb"""([^\s=/>]+)\s*(?:=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
_CHARSET_IN_RE = re.compile(rb"""charset\s*=\s*["']?([^\s"';>]+)""", re.I)
_CT_CHARSET_RE = re.compile(r"""charset\s*=\s*["']?([^\s"';]+)""", re.I)
# The media types that are HTML documents: parsed as HTML, and the only answers a browser renders.
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_MIME_RE = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]+/[!#$%&'*+.^_`|~0-9a-z-]+\Z")  # type/subtype, both HTTP tokens


def codec_for(label: str) -> str | None:
    """Python codec name for an encoding label, or None when unknown or not a text encoding."""
    label = label.strip().strip("\"'").lower()
    if not label or label in _REFUSED:
        return None
    label = _WEB_ALIASES.get(label, label)
    try:
        info = codecs.lookup(label)
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _REFUSED:
        return None
    return _WEB_ALIASES.get(info.name, info.name)


def header_charset(content_type: str) -> str | None:
    """The charset parameter of a Content-Type header value (raw label)."""
    m = _CT_CHARSET_RE.search(content_type)
    return m.group(1) if m else None


def content_type_of(values: Sequence[str]) -> str:
    """What an answer's Content-Type values (all of them, in order) mean, as a browser reads them (Fetch's "extract
    a MIME type"): the last valid type wins (``*/*`` is none), with the charset of an earlier value of the same type
    when it names none. A server that sends two (a default ``text/plain`` and the page's own ``text/html;
    charset=...``) means the last. One value is returned as sent; more come to ``type[; charset=label]``, or ""."""
    if len(values) == 1 and "," not in values[0]:
        return values[0]
    essence, charset, chosen = "", None, ""
    for value in (part for line in values for part in line.split(",")):
        mime = value.partition(";")[0].strip().lower()
        if _MIME_RE.match(mime) is None or mime == "*/*":
            continue
        label = header_charset(value)
        if mime != essence:
            essence, charset = mime, label
        label = label or charset
        chosen = f"{mime}; charset={label}" if label else mime
    return chosen


def prescan_meta(body: bytes) -> str | None:
    """Codec named by the first usable ``<meta charset>`` / ``http-equiv=content-type`` in the first 1 KiB."""
    return _meta_charset(body[:_PRESCAN_BYTES])


def late_meta(body: bytes) -> str | None:
    """Codec named by a meta tag in the head past the first 1 KiB (big scripts and styles before it): browsers obey
    it too (Chromium scans on to the body, the HTML parser changes the encoding when it meets one)."""
    head = body[:_LATE_META_BYTES]
    start = _BODY_RE.search(head)
    return _meta_charset(head[: start.start()] if start else head)


def _meta_charset(head: bytes) -> str | None:
    if b"<!--" in head:
        head = _COMMENT_RE.sub(b"", head)
    for m in _META_RE.finditer(head):
        attrs: dict[bytes, bytes] = {}
        for a in _ATTR_RE.finditer(m.group(1)):
            name = a.group(1).lower()
            if name not in attrs:
                attrs[name] = a.group(2) or a.group(3) or a.group(4) or b""
        label = attrs.get(b"charset")
        if label is None and attrs.get(b"http-equiv", b"").lower() == b"content-type":
            found = _CHARSET_IN_RE.search(attrs.get(b"content", b""))
            label = found.group(1) if found else None
        if label is None:
            continue
        codec = codec_for(label.decode("latin-1"))
        if codec is not None:
            # A page cannot declare itself UTF-16 in ASCII-compatible bytes: the spec reads that as UTF-8.
            return "utf-8" if codec.startswith("utf-16") else codec
    return None


def _valid_utf8(body: bytes, cut_ok: bool = True) -> bool:
    """Strict UTF-8; with ``cut_ok`` a multi-byte character cut off at the end is allowed (bodies may be truncated).

    Checked in slices: decoding the whole body built a str of up to 4x its size just to drop it; a slice's str
    stays in the CPU cache (bench_parse_cost.py). An incomplete character at a slice's end starts the next one."""
    if body.isascii():
        return True
    view = memoryview(body)
    pos, end = 0, len(body)
    try:
        while end - pos > _UTF8_SLICE:
            pos += _utf_8_decode(view[pos : pos + _UTF8_SLICE], "strict", False)[1]
        _utf_8_decode(view[pos:], "strict", not cut_ok)
    except UnicodeDecodeError:
        return False
    return True


def _mostly_utf8(body: bytes, cut_ok: bool = True, declared: bool = False) -> bool:
    """UTF-8, but for a few stray bytes (at least ``_STRAY_RATIO`` valid multi-byte characters per invalid
    sequence): browsers read such a page as UTF-8 with a replacement character or two, and so should we. When the
    page says it is UTF-8 (``declared``), fewer than ``_STRAY_BUDGET`` invalid sequences beside some valid
    multi-byte characters do not disprove it either: too few to tell, and the author's word stands.

    Bodies that are not valid UTF-8 are decoded again slice by slice, counting; legacy text is given up after
    ``_STRAY_BUDGET`` invalid sequences that the valid ones cannot outweigh: ~25 us for a 200 KB Latin-1 page, where
    a decode of the whole body with replacement characters cost 1.4 ms (each error copies its slice: keep them few).
    """
    if _valid_utf8(body, cut_ok):
        return True
    view = memoryview(body)
    pos, end = 0, len(body)
    bad = extra = 0  # invalid sequences; bytes beyond the first of valid multi-byte characters
    while pos < end:
        chunk = view[pos : pos + _UTF8_SLICE]
        try:
            text, used = _utf_8_decode(chunk, "strict", pos + _UTF8_SLICE >= end and not cut_ok)
        except UnicodeDecodeError as exc:
            text, used = _utf_8_decode(chunk[: exc.start], "strict", True)
            extra += used - len(text)
            pos += exc.end
            bad += 1
            if bad >= _STRAY_BUDGET and bad * _STRAY_RATIO > extra:
                return False
            continue
        if not used:  # a character cut at the end (cut_ok)
            break
        extra += used - len(text)
        pos += used
    return extra >= _STRAY_RATIO * bad or (declared and extra > 0 and bad < _STRAY_BUDGET)


def _disproved(codec: str, body: bytes) -> bool:
    """The bytes contradict the charset a header or meta tag names (see the module docstring)."""
    if codec == "utf-8":
        return not _mostly_utf8(body, declared=True)
    if codec == "cp1252":
        return not body.isascii() and _mostly_utf8(body)
    return False


def choose_encoding(body: bytes, content_type: str) -> tuple[str, str, int]:
    """(codec, source, bom_length); source is ``bom``, ``header``, ``meta``, ``detected`` or ``default``."""
    for bom, codec in _BOMS:
        if body.startswith(bom):
            return codec, "bom", len(bom)
    label = header_charset(content_type)
    if label is not None:
        codec_h = codec_for(label)
        if codec_h is not None and not _disproved(codec_h, body):
            return codec_h, "header", 0
    codec_m = prescan_meta(body)
    if codec_m is not None and not _disproved(codec_m, body):
        return codec_m, "meta", 0
    if _mostly_utf8(body, cut_ok=False):
        return "utf-8", "detected", 0
    if codec_m is None:
        codec_m = late_meta(body)
        if codec_m is not None and not _disproved(codec_m, body):
            return codec_m, "meta", 0
    codec_d = _detected(body[:_DETECT_BYTES])
    if codec_d is not None:
        return codec_d, "detected", 0
    return "utf-8", "default", 0


def _detected(prefix: bytes) -> str | None:
    """charset-normalizer's best guess, but windows-1252 (what a browser reads an undeclared Western page as) when
    it fits as well: its candidates that tie come in no meaningful order, and French read as windows-1250 is
    "crčme brűlée"."""
    found = charset_normalizer.from_bytes(prefix)
    best = found.best()
    if best is None:
        return None
    for match in found:
        if match.encoding == "cp1252" and (match.chaos, match.coherence) == (best.chaos, best.coherence):
            return "cp1252"
    return codec_for(best.encoding)


def decode_html(body: bytes, content_type: str) -> tuple[str, str, str]:
    """(text, codec, source): the body decoded the way :func:`choose_encoding` says, bad bytes replaced."""
    codec, source, bom = choose_encoding(body, content_type)
    return body[bom:].decode(codec, "replace"), codec, source
