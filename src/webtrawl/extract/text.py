"""``--text`` and ``--markdown``: each HTML page's main text (plain and/or Markdown), title, author, date, language.

trafilatura is an optional extra (``pip install 'webtrawl[text]'``): it pulls in lxml helpers and date parsing most
crawls do not need. Each page is capped twice: the HTML it reads (``--text-max-bytes``, the rest is cut) and the time
it may take (``--extract-timeout``, by the same alarm as user code).

The Markdown is trafilatura's own rendering of the main-content tree it already built for the plain text (one
extraction, not two): headings, lists, pipe tables, emphasis, code blocks, and links and images with their URLs made
absolute against the page's URL. Boilerplate (navigation, footers, cookie banners) is left out exactly as for the
text, so the two agree (benchmarks/RESULTS.md measures how closely).
"""

from __future__ import annotations

import functools
import logging
import re
from copy import deepcopy
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

from webtrawl.errors import InputError
from webtrawl.extract.chunks import TABLE_DELIMITER, closes, opens
from webtrawl.extract.document import Document
from webtrawl.extract.textprep import prepared, spaced
from webtrawl.extract.unseen import unseen, without
from webtrawl.optional import optional_import


@dataclass(slots=True)
class MainText:
    text: str = ""
    title: str = ""
    author: str = ""
    date: str = ""
    language: str = ""
    markdown: str = ""


def check_available(flag: str = "--text") -> None:
    optional_import("trafilatura", needed_by=flag, extra="text", error=InputError)
    optional_import("py3langid", needed_by=flag, extra="text", error=InputError)
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)  # it warns about every page it finds empty
    logging.getLogger("htmldate").setLevel(logging.CRITICAL)


@functools.cache
def prepare() -> None:
    """The one-time work of the first page's main text, for the caller to do before that page's
    ``--extract-timeout`` starts: py3langid's model (a second or more of one core, several under load) and the list
    of top-level domains trafilatura's metadata reads (through courlan) for a host whose name courlan's regex does
    not take (a label under four letters: bbc.co.uk; 4 s of the first page's 21 s at a load of 28). Loaded inside
    the time limit, a busy machine's first page ran past it, the interrupted load left the model unloaded, and
    every later page paid it again and failed the same way. Cached once it has succeeded."""
    from courlan import extract_domain
    from py3langid.langid import classify

    classify("")
    extract_domain("http://a.test/")


def main_text(doc: Document, max_chars: int, markdown: bool = False, exclude: str = "") -> MainText:
    """The page's main text; with ``markdown`` also as Markdown (links and images kept, as absolute URLs); without
    the elements the XPath ``exclude`` finds (``--text-exclude``: an ad, a date that changes on every visit)."""
    import trafilatura

    html: Any = doc.text[:max_chars]
    shared = "selector" in doc.__dict__ and len(doc.text) <= max_chars
    if shared:
        html = doc.selector.root  # lxml already parsed this page (XPath rules, callback): no third parse
    from trafilatura.utils import load_html

    tree = html if shared else load_html(html)
    if tree is not None and exclude:
        kept = without(tree, exclude, shared)
        tree, shared = kept, shared and kept is tree
    linked: dict[str, str] = {}
    if tree is not None:
        shown = unseen(tree, shared)
        tree, shared = shown, shared and shown is tree
        html, linked = prepared(tree, shared, markdown)
    found = trafilatura.bare_extraction(
        html,
        url=doc.final_url,
        with_metadata=True,
        include_comments=False,
        favor_precision=False,
        include_links=markdown,
        include_images=markdown,
        include_formatting=markdown,
        output_format="python",
    )
    if found is None:
        return MainText(language=doc.language)
    get = found.as_dict().get if hasattr(found, "as_dict") else found.get
    text, body = get("text") or "", get("body")
    rendered = ""
    if markdown:
        links = _absolute(linked, doc.final_url)
        rendered = _rendered(body, links, doc.final_url) if body is not None else text
        rendered, text = _tidy(spaced(rendered)), _plain(body, text)
    return MainText(
        text=_trimmed(spaced(text), body)[:max_chars],
        title=spaced(get("title") or ""),
        author=spaced(get("author") or ""),
        date=get("date") or "",
        language=_language(get("language") or doc.language) or _identified(text),
        markdown=rendered[:max_chars],
    )


def _language(tag: str) -> str:
    """A language tag as BCP 47 writes it (``en-US``, ``pt-BR``, ``zh-Hant-TW``): pages write ``en-us``, ``pt_BR``
    or ``EN``, so that a corpus grouped or filtered by language split one language into several. A value that is no
    language tag is kept as the page has it."""
    tag = tag.strip()
    if not _LANGUAGE_TAG.match(tag):
        return tag
    first, *rest = tag.replace("_", "-").split("-")
    subtags = [first.lower()]
    for sub in rest:
        subtags.append(sub.upper() if len(sub) == 2 else sub.title() if len(sub) == 4 else sub.lower())
    return "-".join(subtags)


_LANGUAGE_TAG = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8})*$")
_IDENTIFY_MIN_CHARS = 200  # below this py3langid's guess is often wrong (a menu, a cookie notice): no language
_IDENTIFY_CHARS = 2000  # its cost is linear in the text (4.4 ms a corpus page whole, 1.0 for this much): on all 181
# corpus pages it names the same language from this much as from the whole text


def _identified(text: str) -> str:
    """The language of a page that declares none (one in six of the corpus: CNN, Al Jazeera, The Hill...), as an
    ISO 639-1 code identified from its main text (py3langid, trafilatura's own choice; the ``text`` extra), so that
    a corpus filtered by language keeps them. "" for a short text."""
    if len(text) < _IDENTIFY_MIN_CHARS:
        return ""
    from py3langid.langid import classify

    return str(classify(text[:_IDENTIFY_CHARS])[0])


def _absolute(linked: dict[str, str], url: str) -> dict[str, str]:
    """``linked`` (image URL: link target, as the page writes them) with both made absolute, the image's as
    trafilatura makes it (so that it is the ``src`` of its ``graphic``), the target as a browser does."""
    return {src if src.startswith("http") else urljoin(url, src): urljoin(url, href) for src, href in linked.items()}


def _rendered(body: Any, links: dict[str, str], url: str) -> str:
    """The Markdown of the tree with each run of the page source's whitespace (a newline and indent in the middle of
    a sentence) made one space, as a browser shows it, outside code: so that a page whose source only changed its
    line breaks or indentation has the same Markdown, and the same chunks, as before. An image that was a link's
    only content (``links``: its URL, the link's) is a link again, ``[![alt](src)](target)``; every image's URL is
    absolute (against ``url``)."""
    from trafilatura.xml import xmltotxt

    for node in body.iter():
        code = any(up.tag == "code" for up in node.iterancestors())
        if node.text:
            node.text = _BLANK_IN_CODE.sub("\n\u2424", node.text) if code or node.tag == "code" else _one(node.text)
        if node.tail:
            node.tail = _BLANK_IN_CODE.sub("\n\u2424", node.tail) if code else _one(node.tail)
            node.tail = "" if node.tag == "lb" and node.tail == " " else node.tail  # no space at a line's end
    body = _for_markdown(body)
    targets: list[tuple[str, str]] = []
    for graphic in body.iter("graphic"):
        if (src := graphic.get("src", "")) and not src.startswith("http"):
            src = urljoin(url, src)  # trafilatura leaves a heading's image's URL as the page wrote it
            graphic.set("src", src)
        if (target := links.get(src)) is not None:
            graphic.set("src", f"{_LINKED}{len(targets)}")  # a mark xmltotxt writes as it is
            targets.append((_target(src), _target(target)))
    images = _inline_images(body)
    markdown = str(xmltotxt(body, True))
    if images:
        markdown = _INLINE_IMAGE.sub(lambda m: _spaced_image(m, images), markdown)
    if not targets:
        return markdown
    return _LINKED_IMAGE.sub(lambda m: "[{}({})]({})".format(m[1], *targets[int(m[2])]), markdown)


def _inline_images(body: Any) -> list[str]:
    """Each image among a paragraph's (a quote's, a heading's) text made a mark in that text, and its Markdown, by
    the mark's number: trafilatura writes an image as a block, so ``text <img><a>link</a> text`` came out as two
    paragraphs (and a chunk could cut between them), the image ending the first. An image alone in its paragraph
    stays a block; one in a list item or a cell is inline already."""
    from trafilatura.xml import xmltotxt

    images: list[str] = []
    for graphic in body.xpath(_IN_TEXT):
        alone = body.makeelement("body", {})
        alone.append(deepcopy(graphic))
        alone[0].tail = None
        images.append(str(xmltotxt(alone, True)).strip())
        _replace(graphic, f" {_IMAGE_MARK}{len(images) - 1}{_IMAGE_MARK_END} ")
    return images


def _spaced_image(mark: re.Match[str], images: list[str]) -> str:
    """The image for its mark, with one space between it and the words around it: none at its line's start or end,
    after an opening bracket, or before punctuation."""
    text, start, end = mark.string, mark.start(), mark.end()
    before = " " if start and text[start - 1] not in "\n([" else ""
    after = " " if end < len(text) and text[end] not in "\n.,;:!?)]" else ""
    return before + images[int(mark[1])] + after


_IN_TEXT = "//graphic[parent::p or parent::quote or parent::head][not(ancestor::item or ancestor::cell)]"
_IN_TEXT += "[normalize-space(..) or count(../*) > 1]"
_IMAGE_MARK, _IMAGE_MARK_END = "\u2e3b", "\u2e3a"  # three-em dash, number, two-em dash: as _BREAK, in no text
_INLINE_IMAGE = re.compile(f" *{_IMAGE_MARK}(\\d+){_IMAGE_MARK_END} *")
_LINKED = "webtrawl-linked-image:"
_LINKED_IMAGE = re.compile(r"(!\[(?:\\.|[^\]\\])*\])\(" + _LINKED + r"(\d+)\)")


def _target(url: str) -> str:
    """A link's target as Markdown writes it: in angle brackets if it has a space, a bracket or a parenthesis (as
    trafilatura writes its links')."""
    if not any(c in url for c in " <>()"):
        return url
    return "<" + url.replace("\\", "\\\\").replace("<", "\\<").replace(">", "\\>") + ">"


def _one(text: str) -> str:
    return _SPACES.sub(" ", text)


def _for_markdown(body: Any) -> Any:
    """A copy of the tree whose line breaks (``<br>``) inside a paragraph are Markdown hard breaks (marked here,
    a backslash and a newline once _tidy sees the lines around it: not two spaces, which are trailing whitespace in
    every chunk): trafilatura renders each as a paragraph break, so an address or a sentence with a ``<br>`` in it was
    cut into paragraphs (and could be cut between two chunks). Two or more in a row stay one paragraph break, as a
    browser shows them (extract/textprep.py keeps trafilatura from making ``<br><br>`` one).

    A heading inside a list item is bold text: trafilatura writes its ``####`` where it falls in the item's line,
    which Markdown reads as literal hashes mid-line (a teaser under a related story's link), or as a heading holding
    the whole item."""
    body = deepcopy(body)
    for head in body.xpath(".//item//head"):
        head.tag = "hi"
        head.attrib.clear()
        head.set("rend", "#b")
        head.tail = " " + (head.tail or "").lstrip(" ")  # a block no more: the words around it keep apart
        previous, parent = head.getprevious(), head.getparent()
        if previous is not None:
            previous.tail = (previous.tail or "").rstrip(" ") + " "
        elif (parent.text or "").strip():
            parent.text = parent.text.rstrip(" ") + " "
    for lb in list(body.iter("lb")):
        parent = lb.getparent()
        block = next((up.tag for up in lb.iterancestors() if up.tag in _BLOCKS), "")
        if block == "head" and parent is not None:
            _replace(lb, " ")  # a Markdown heading is one line: the rest would be a paragraph under it
            continue
        if block not in ("p", "quote") or parent is None:
            continue
        run = False
        while (following := _next_break(lb)) is not None:
            lb.tail, run = following.tail, True  # lb's own tail was spaces only
            parent.remove(following)
        if run:
            continue  # trafilatura's paragraph break
        _replace(lb, _BREAK + "\n")  # _tidy writes the backslash where a break it is
    return body


def _replace(lb: Any, text: str) -> None:
    """The break taken out of the tree, ``text`` and its tail where it was."""
    text += (lb.tail or "").lstrip(" ")
    previous, parent = lb.getprevious(), lb.getparent()
    if previous is not None:
        previous.tail = (previous.tail or "").rstrip(" ") + text
    else:
        parent.text = (parent.text or "").rstrip(" ") + text
    parent.remove(lb)


def _next_break(lb: Any) -> Any:
    following = lb.getnext()
    return following if following is not None and following.tag == "lb" and not (lb.tail or "").strip() else None


_BREAK = "\u2e3b\u2e3a\u2e3b"  # three-em, two-em, three-em dash: no text has them so; trafilatura drops unprintables
_BLOCKS = {"p", "quote", "head", "item", "cell", "code", "list", "table", "row", "body"}


_SPACES = re.compile(r"[ \t\n\r\f]+")  # HTML's whitespace (a no-break space is not)
# An empty line in code, before the line after it: trafilatura drops every empty line of its output but those it
# marks with U+2424 (its own paragraph breaks), so a code block lost its blank lines (a Python file's between two
# functions) unless they carry the mark too.
_BLANK_IN_CODE = re.compile(r"\n(?=\n)")


def _plain(body: Any, markdown: str) -> str:
    """The plain text of the tree the Markdown was rendered from (so --text and --markdown tell the same story),
    made as trafilatura makes its own: formatting and link tags merged into their text, then every element's text
    trimmed (the tree of a formatting extraction keeps the page source's indentation around them)."""
    if body is None:
        return markdown
    from lxml import etree  # type: ignore[import-untyped]
    from trafilatura.utils import normalize_unicode, sanitize_tree
    from trafilatura.xml import xmltotxt

    body = deepcopy(body)
    etree.strip_tags(body, "ref", "hi")  # a link's text stays, its target goes; so does emphasised text
    etree.strip_elements(body, "graphic", with_tail=False)
    sanitize_tree(body)
    return _BLANK_LINES.sub("\n", normalize_unicode(xmltotxt(body, False))).strip("\n")


def _trimmed(text: str, body: Any) -> str:
    """The plain text without spaces ending a line, nor starting one but in a page with code (its indentation)."""
    text = _LINE_END.sub("", text)
    return text if body is not None and body.find(".//code") is not None else _LINE_START.sub("", text)


# Spaces starting a line of the plain text: the space before an element trafilatura leaves out, or between two
# inline ones (" comments", " Filed under: ...": 62 lines on 25 corpus pages).
_LINE_START = re.compile(r"^[ \t]+", re.MULTILINE)
# Spaces ending a line of the plain text: trafilatura keeps those before an element it leaves out of it (an image, a
# link's target), so one line in sixteen of the corpus's text ended in one (noise in every record and chunk).
_LINE_END = re.compile(r"[^\S\n]+$", re.MULTILINE)
_BLANK_LINES = re.compile(r"\n(?:[^\S\n]*\n)+")  # lines of spaces, tabs or no-break spaces only
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])(?:\s|$)")


def _tidy(markdown: str) -> str:
    """trafilatura's Markdown without the page source's indentation it sometimes keeps: a heading or a table row
    indented four spaces reads as a code block (and a chunk loses its heading). Outside code fences, no line ends in
    spaces or tabs (trafilatura ends table rows, images and some links with one: noise in every chunk), lines of
    whitespace become blank (and runs of blank lines one, none between two table rows), and only a list item right
    under another one keeps its indent (a nested one). A line break is a backslash ending its line, but at a
    paragraph's start or end, where it is no break but a literal backslash: there it goes."""
    out: list[str] = []
    fence = ""
    lines = markdown.split("\n")
    for n, line in enumerate(lines):
        if fence:
            fence = "" if closes(fence, line) else fence
            out.append(line)  # code as it was: its blank lines and its indentation are its own
            continue
        line = line.rstrip(" \t")
        if line.endswith(_BREAK):
            line = line[: -len(_BREAK)].rstrip(" \t")
            if not line.strip():
                continue
            if n + 1 < len(lines) and lines[n + 1].strip(" \t" + _BREAK):
                line += "\\"
        if opened := opens(line):
            fence = opened
            line = line.lstrip()
        elif not line.strip():
            line = ""
        elif _LIST_ITEM.match(line) and out and _LIST_ITEM.match(out[-1]):
            pass  # an item right under another one: its indent says how deep it is nested
        else:
            line = line.lstrip()
            if line.startswith("|") and len(out) > 1 and not out[-1] and out[-2].startswith("|"):
                out.pop()  # rows of one table: a blank line between them would end it
        if line or not out or out[-1]:
            out.append(line)
    return "\n".join(_delimited(out)).strip("\n")


def _delimited(lines: list[str]) -> list[str]:
    """The lines with a delimiter row after each table's first row that lacks one (trafilatura leaves it out when
    that row has no ``th`` cells): without it the rows are not a table but a paragraph of pipes."""
    out: list[str] = []
    fence = ""
    for n, line in enumerate(lines):
        out.append(line)
        if fence:
            fence = "" if closes(fence, line) else fence
        elif opened := opens(line):
            fence = opened
        elif _table_starts(lines, n) and not (n + 1 < len(lines) and TABLE_DELIMITER.match(lines[n + 1])):
            out.append("|" + "---|" * max(len(_PIPE.findall(line.strip())) - 1, 1))
    return out


def _table_starts(lines: list[str], n: int) -> bool:
    return lines[n].startswith("|") and not (n and lines[n - 1].startswith("|"))


_PIPE = re.compile(r"(?<!\\)\|")  # a cell border, not an escaped pipe in a cell's text
