"""Bodies of the chaos web: pages in legacy encodings, broken HTML, bombs, non-HTML files and trap pages.

Each function is pure (same arguments, same bytes) and the expensive ones (the 12 MB page, the bombs) are
built once per process. The titles and the link targets are what the tests assert on, so they are returned
or derivable from the arguments.
"""

from __future__ import annotations

import codecs
import functools
import zlib
from html import escape

import brotli

HUGE_SIZE = 12 * 1024 * 1024
BOMB_SIZE = 300 * 1024 * 1024
ROBOTS_HUGE_SIZE = 5 * 1024 * 1024
NESTED_DIVS = 100_000
ATTRIBUTE_SIZE = 1024 * 1024
REDIRECT_CHAIN = 10

# label -> (charset, title, paragraph): texts a crawler must decode exactly; long enough for charset detection.
ENCODED_TEXTS: dict[str, tuple[str, str, str]] = {
    "sjis": (
        "shift_jis",
        "東京の天気予報と今日のニュース",
        "東京都の明日の天気は晴れのち曇り、最高気温は二十五度の予想です。週末は雨が降る見込みで、"
        "傘を持って出かけることをおすすめします。電車の運行情報と地域のニュースもお伝えします。",
    ),
    "gbk": (
        "gbk",
        "北京欢迎你 中文网页编码测试",
        "这是一个用于测试网页编码识别的中文页面。北京的天气今天晴朗 最高气温二十八度。"
        "我们的爬虫必须正确地读取这个页面的标题和正文 而不是显示乱码。欢迎大家访问我们的网站。",
    ),
    "cp1251": (
        "windows-1251",
        "Привет, мир: проверка кодировки страницы",
        "Это страница для проверки того, что поисковый робот правильно определяет кодировку. "
        "Погода в Москве сегодня ясная, температура двадцать градусов. Новости науки и культуры.",
    ),
    "latin1": (
        "iso-8859-1",
        "Grüße aus München: Café crème à la française",
        "Dès le matin, les élèves étudient à l'école près du lac. Über die Brücke gehen wir zum Bäcker "
        "und kaufen Brötchen für das Frühstück. Señor Muñoz habla español con acentuación correcta.",
    ),
}


def encoded_page(key: str, declare: str, links: tuple[str, ...] = ()) -> bytes:
    """The page of ``ENCODED_TEXTS[key]`` encoded in its codec; ``declare`` is ``meta`` or ``none``."""
    codec, title, text = ENCODED_TEXTS[key]
    meta = f'<meta charset="{codec}">\n' if declare == "meta" else ""
    anchors = "".join(f'<a href="{escape(h)}">{escape(h)}</a>\n' for h in links)
    paragraphs = "".join(f"<p>{escape(text)}</p>\n" for _ in range(4))
    html = f"<!DOCTYPE html>\n<html><head>\n{meta}<title>{escape(title)}</title>\n</head><body>\n{paragraphs}{anchors}"
    return (html + "</body></html>\n").encode(codec)


def utf8_page(title: str, links: tuple[str, ...] = (), *, meta: bool = True, bom: bool = False) -> bytes:
    anchors = "".join(f'<a href="{escape(h)}">{escape(h)}</a>\n' for h in links)
    head = '<meta charset="utf-8">\n' if meta else ""
    html = (
        f"<!DOCTYPE html>\n<html><head>\n{head}<title>{escape(title)}</title>\n</head><body>\n{anchors}</body></html>\n"
    )
    return (codecs.BOM_UTF8 if bom else b"") + html.encode()


def unclosed_page(links: tuple[str, ...]) -> bytes:
    """Tags left open everywhere, attributes without quotes, a stray ``</div>``: browsers still find the links."""
    parts = ["<html><head><title>Unclosed tags page</title><body><div><p><b><i>"]
    for i, href in enumerate(links):
        parts.append(f"<table><tr><td><a href={href}>link {i}<span class=x")
        parts.append("<li><ul><p>")
    parts.append("</div></div></span><font")
    return "".join(parts).encode()


def deep_page(depth: int, link: str) -> bytes:
    """``depth`` nested ``<div>`` elements with the only link at the bottom, never closed."""
    return (
        b"<html><head><title>Deeply nested page</title></head><body>"
        + b"<div>" * depth
        + f'<a href="{link}">deep</a>'.encode()
    )


def big_attribute_page(size: int, link: str) -> bytes:
    """One attribute value of ``size`` bytes before the link."""
    return (
        b'<html><head><title>Huge attribute page</title></head><body><div data-blob="'
        + b"A" * size
        + f'">x</div><a href="{link}">after the blob</a></body></html>'.encode()
    )


@functools.cache
def huge_page(size: int) -> bytes:
    """A valid HTML page of ``size`` bytes (text filler)."""
    head = b"<!DOCTYPE html><html><head><title>Twelve megabyte page</title></head><body><p>"
    tail = b"</p></body></html>\n"
    filler = b"lorem ipsum dolor sit amet " * (size // 27 + 1)
    return head + filler[: max(0, size - len(head) - len(tail))] + tail


@functools.cache
def gzip_bomb(inflated: int) -> bytes:
    """A gzip stream of ``inflated`` zero bytes (a 300 MB bomb is ~300 KB on the wire)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    parts = [comp.compress(block) for _ in range(inflated >> 20)]
    parts.append(comp.flush())
    return b"".join(parts)


@functools.cache
def brotli_bomb(inflated: int) -> bytes:
    """A brotli stream of ``inflated`` zero bytes (a few hundred bytes on the wire)."""
    comp = brotli.Compressor(quality=5)
    block = bytes(1 << 20)
    parts = [comp.process(block) for _ in range(inflated >> 20)]
    parts.append(comp.finish())
    return b"".join(parts)


PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
JSON = b'{"title": "not a web page", "links": ["/should-not-be-followed"]}\n'


def robots_binary() -> bytes:
    """robots.txt of random-looking binary bytes (deterministic)."""
    return bytes((i * 131 + 7) % 256 for i in range(4096))


@functools.cache
def robots_huge(size: int) -> bytes:
    """``size`` bytes of robots.txt: a rule at the top, comment filler, a rule past any sane cap."""
    head = b"User-agent: *\nDisallow: /secret\n"
    tail = b"Disallow: /late\n"
    line = b"# filler filler filler filler filler filler filler filler filler filler\n"
    return head + line * ((size - len(head) - len(tail)) // len(line)) + tail
