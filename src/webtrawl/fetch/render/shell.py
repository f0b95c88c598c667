"""``--render auto``: does an HTTP answer look like a page its scripts still have to build?

A render costs 50-100x a plain fetch, so only pages that need one get it. The signs, from what script-built sites
send: almost no visible text while scripts are present, an empty application root (``<div id="root">``,
``<app-root>``...), or a ``<noscript>`` that tells the reader to turn JavaScript on. A page with real text is never
called a shell, whatever scripts it also carries. Runs in the fetcher, on HTML 2xx answers that contain
``<script`` only (a byte search first: most pages of a broad crawl stop there).
"""

from __future__ import annotations

import re

from selectolax.lexbor import LexborHTMLParser

from webtrawl.decompress import content_codings, decompress
from webtrawl.errors import WebtrawlError
from webtrawl.fetch.response import Response
from webtrawl.formats.encoding import HTML_TYPES

MIN_TEXT = 200  # visible characters below which a page with scripts may be a shell
_SCRIPT_BYTES = 2000  # inline script bytes that count as "large scripts" when there is no <script src>
_ROOT_IDS = ("root", "app", "__next", "__nuxt", "svelte", "main-app", "application")
_ROOT_SELECTOR = ", ".join([*(f"#{i}" for i in _ROOT_IDS), "app-root", "[ng-app]", "[data-reactroot]", "[ng-version]"])
_ENABLE_JS = re.compile(
    r"(enable|turn on|requires?|need)\W+(\w+\W+){0,3}javascript|javascript\W+(is\W+)?(required|disabled)"
)


def shell_reason(resp: Response, max_decompressed: int) -> str:
    """``shell: <why>`` if ``resp`` looks like a script-built shell, else ``""``."""
    payload = html_payload(resp, max_decompressed)
    return payload_reason(payload) if payload is not None else ""


def html_payload(resp: Response, max_decompressed: int) -> bytes | None:
    """The decoded body of a whole 2xx HTML answer (what ``auto`` may render), else None."""
    if not 200 <= resp.status < 300 or resp.truncated:
        return None
    if resp.media_type() not in HTML_TYPES:
        return None
    try:
        return decompress(resp.body, content_codings(resp.header_values("content-encoding")), max_decompressed)
    except WebtrawlError:
        return None


def payload_reason(payload: bytes) -> str:
    """:func:`shell_reason` on a decoded HTML body."""
    return classify(payload) if b"<script" in payload.lower() else ""


def classify(payload: bytes) -> str:
    """The heuristic on a decoded HTML document that has scripts (see the module docstring)."""
    tree = LexborHTMLParser(payload)
    noscript = " ".join(node.text(deep=True) for node in tree.css("noscript")).lower()
    scripts = tree.css("script")
    with_src = sum(1 for node in scripts if node.attributes.get("src"))
    inline = sum(len(node.text(deep=True)) for node in scripts if not node.attributes.get("src"))
    roots = tree.css(_ROOT_SELECTOR)
    empty_root = any(not " ".join(node.text(deep=True).split()) for node in roots)
    tree.strip_tags(["script", "style", "noscript", "template"])
    body = tree.body
    visible = len(" ".join(body.text(deep=True, separator=" ").split())) if body is not None else 0
    if _ENABLE_JS.search(noscript) and visible < 4 * MIN_TEXT:
        return "shell: noscript asks for JavaScript"
    if visible >= MIN_TEXT:
        return ""
    if empty_root:
        return "shell: empty app root"
    if with_src or inline >= _SCRIPT_BYTES:
        return "shell: little text, scripts"
    return ""
