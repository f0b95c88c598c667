"""The page's tree made ready for the main text's extraction: what a browser shows, where trafilatura reads the
source literally (the images, breaks and ``pre`` parts for ``--markdown`` only; the rest for ``--text`` too).

- A lazy-loaded image (``data-src``, ``data-lazy-src``, ``data-original``, ``data-srcset``...; a script swaps it in)
  gets that URL as its ``src``: trafilatura reads ``src`` and ``data-src`` only, so the image was lost or kept as the
  page's placeholder (a 1x1 pixel or a spinner, the same for every image of the site). An image with only a
  ``srcset`` (or a ``data:`` placeholder in ``src``) gets the ``srcset``'s widest candidate.
- An image that is a link's only content keeps its link (``[![alt](src)](target)``, see ``_image_links``); one beside
  a link's text goes before the link, which keeps its text.
- An ``output`` holding an image (IGN frames each of its images in one) is unwrapped: trafilatura drops an
  ``output`` (a form's) with all it holds.
- An empty link (an icon font, an anchor target) is unwrapped: trafilatura's tree gives the text after it to the
  link, so ``see <a href=/x></a>the results`` rendered as ``see [the results](/x)``.
- A ``pre`` is its text in one ``code``, a code block as trafilatura makes of ``<pre><code>`` (see ``_as_code``).
- Two ``<br>`` in a row get a newline between them: trafilatura makes them one (a line break, where a browser shows
  a blank line), but keeps both when the source has whitespace between them.
- Loose text between ``<br><br>`` in a ``div`` is made paragraphs (see ``_paragraphs``), and so is a ``section``'s
  or a ``div``'s before its first heading, paragraph or list (trafilatura lost it); a table laid out as a page is
  made ``div`` elements (see ``_unlaid``).
- The space after an inline element outside a paragraph (loose text in a ``div``, a caption's spans) is kept: see
  ``SPACE`` (trafilatura trimmed it, and glued the words around it).
- A table's ``tfoot`` goes after its body, where a browser shows it (HTML 4 put it before), and one that repeats the
  header row (sports and stats tables) is left out: it was the table's second row, the header's text twice.

A tree shared with XPath rules and callbacks (the document's selector) is copied before it is changed; one that needs
no change is passed as it is.
"""

from __future__ import annotations

import re
from copy import deepcopy
from typing import Any

# Attributes a lazy-loading script copies into src, in the order tried; "data-src" first as trafilatura has it.
_LAZY_SRC = ("data-src", "data-lazy-src", "data-original", "data-lazy", "data-url", "data-hi-res-src")
_LAZY_SRCSET = ("data-lazy-srcset", "data-srcset")
_CANDIDATE = re.compile(r"[\s,]*([^\s,][^\s]*)([^,]*)")  # a srcset's URL (may hold commas) and its descriptors
_WIDTH = re.compile(r"^\s*(\d+(?:\.\d+)?)[wx]\s*$")
_NEEDED = "//a[not(normalize-space()) and not(.//img)] | //table/tfoot | //div[br and text()[normalize-space()]]"
# A section's or a div's loose text before a heading, a paragraph or a list: trafilatura lost it (IGN's deals'
# introduction; a div's whole first sentence). (All of a div's loose text made paragraphs changed what trafilatura
# took of the divs around it; this, on none of the corpus's 181 pages.)
_NEEDED += " | //*[self::section or self::div][node()[1][self::text()][normalize-space()]]"
_NEEDED += "[h1 or h2 or h3 or h4 or h5 or h6 or p or ul or ol]"
_INLINE_IN = "ancestor::*[self::p or self::li or self::td or self::th or self::a or self::h1 or self::h2 or self::h3"
_INLINE_IN += " or self::h4 or self::h5 or self::h6 or self::dt or self::dd or self::figcaption or self::blockquote]"
_NEEDED += f" | //span[br and text()[normalize-space()] and not({_INLINE_IN})]"  # a span holding a page's divs
# A table laid out as a page: a cell of it holds a heading, a table, or paragraphs (a Markdown table cannot).
_LAYOUT = "*[self::h1 or self::h2 or self::h3 or self::h4 or self::h5 or self::h6 or self::table]"
_NEEDED += f" | //table[*/tr/td[.//{_LAYOUT} or count(p | div) > 1] or tr/td[.//{_LAYOUT} or count(p | div) > 1]]"
# A caption written twice, cut and whole, for a script to show one (Hearst's newspapers: caption-truncated beside
# caption-full, each with a "more"/"less" toggle): the text had it twice, glued ("...at less Karma Automotive...").
_NEEDED += " | //div[contains(@class, 'truncated')][../div[contains(@class, '-full')]]"
_MARKDOWN = " | //br[following-sibling::node()[1][self::br]] | //pre"
_MARKDOWN += " | //img[@data-src or @data-lazy-src or @data-original or @data-lazy or @data-url or @data-hi-res-src"
_MARKDOWN += " or @data-lazy-srcset or @data-srcset or @srcset] | //img/ancestor::a[@href] | //output[.//img]"
# A caption of loose text and inline elements: trafilatura drops a figcaption but for its paragraphs (an image's
# credit and what it shows, which an LLM reading the Markdown has no other way to know).
_MARKDOWN += " | //figcaption[text()[normalize-space()] or *][not(p or div)]"

# Inline elements with a space after them (or at the end of their own text): trafilatura trims every text and tail
# of the elements it takes one by one (loose text in a div, a caption's spans), so "<b>will</b> appreciate" came out
# "willappreciate" and "<em>frontier!</em> <span>(Image credit)</span>" "frontier!(Image credit)". Such a space is
# made SPACE (which trim keeps) and made a space again in the output (see ``spaced``).
_INLINE_TAGS = {"a", "abbr", "b", "cite", "em", "i", "mark", "q", "s", "small", "span", "strong", "sub", "sup", "u"}
_EMPHASIS = {"b", "em", "i", "strong", "u"}  # trafilatura trims the text before their first child too (not a span's)
# (one in a paragraph, a list item, a cell or a heading is left as it is: there trafilatura keeps the spaces)
_LOOSE = {"div", "figcaption", "section", "article", "main", "header", "footer", "aside", "center", "body"}
SPACE = "\u2e3f"  # capitulum: printable (trafilatura keeps it), and no text writes it so
_MARKS = re.compile(f"[ {SPACE}]*{SPACE}[ {SPACE}]*")
_MARKS_LINE = re.compile(f"^[ {SPACE}]*{SPACE}[ {SPACE}]*(?:\n|$)", re.MULTILINE)


def spaced(text: str) -> str:
    """``text`` with each SPACE (and the spaces beside it) one space again, none at a line's start or end, and no
    line left of one alone."""
    if SPACE not in text:
        return text
    text = _MARKS_LINE.sub("", text)
    return _MARKS.sub(lambda m: " " if m.start() > 0 and m.end() < len(text) and _inside(text, m) else "", text)


def _inside(text: str, m: re.Match[str]) -> bool:
    return text[m.start() - 1] != "\n" and text[m.end()] != "\n"


def prepared(tree: Any, shared: bool, markdown: bool) -> tuple[Any, dict[str, str]]:
    """``tree`` (an lxml root) without empty links, with its tables' footers at their end and, for ``markdown``, lazy
    images' real URLs and breaks in a row kept apart; copied first if ``shared`` and it needs a change. With it, the
    link target of each image that is a link's only content, by the image's URL as the page writes it (see
    ``_image_links``)."""
    needed = _NEEDED + _MARKDOWN if markdown else _NEEDED
    found, glued = tree.xpath(needed), _glued(tree)
    links: dict[str, str] = {}
    if not found and not glued:
        return tree, links
    if shared:
        tree = deepcopy(tree)
        found, glued = tree.xpath(needed), _glued(tree)
    for element in glued:
        _keep_spaces(element)
    linking = []
    for element in found:
        if "truncated" in (element.get("class") or ""):
            _truncated(element)
        elif element.tag == "a" and element.find(".//img") is not None:
            linking.append(element)  # after the loop: its images' lazy URLs are then known
        elif element.tag == "img":
            _lazy_image(element)
        elif element.tag == "table":
            _unlaid(element)
        elif element.tag in ("div", "span", "section", "figcaption"):
            _apart(element) if element.tag == "figcaption" else None
            _paragraphs(element)
        elif element.tag == "tfoot":
            _footer_last(element)
        elif element.tag == "pre":
            _as_code(element)
        elif element.tag == "output":
            _lift(element)  # an image's frame (IGN): trafilatura drops an output, a form's, with all it holds
        elif element.tag == "br":
            element.tail = "\n"  # trafilatura makes <br><br> one break, <br> newline <br> two, as a browser does
        else:
            _unwrap(element)
    for link in linking:
        _image_links(link, links)
    return tree, links


def _image_links(link: Any, links: dict[str, str]) -> None:
    """A link's images: trafilatura moves each out of the link, and drops a link left without text, so an image that
    was a link (to the full-size photo, to the article) was an image only in the Markdown; and an image's tail went
    out with it, so ``<a><img> Label</a>`` lost its link. An image that is the link's only content has its target
    noted in ``links`` (text.py links it again) and the link goes (trafilatura gave it the text after it, as an empty
    link's); one beside the link's text is put before the link, the text stays
    in it."""
    href = (link.get("href") or "").strip()
    if not href or href.startswith(("#", "javascript:")):
        return
    images = list(link.iter("img"))
    if not any(text.strip() for text in link.itertext()):
        for img in images:
            if src := _image_src(img):
                links.setdefault(src, href)
        for child in list(link):  # the link goes, its images stay: trafilatura gave it the text after it
            link.addprevious(child)
        _unwrap(link)
        return
    for img in images:
        _unwrap(img)
        link.addprevious(img)


def _glued(tree: Any) -> list[Any]:
    """The inline elements of a div (or a caption, a section...) with a space after them that trafilatura would trim:
    before text, or before another inline element; or at the end of their own text (an emphasis's: or of the text
    before its first child). And the other elements with only a space between them and an inline one."""
    out = []
    for element in tree.iter(*_INLINE_TAGS):  # a loop, not XPath: as fast as the plainest XPath over every element
        previous = element.getprevious()
        if _spaced_block(previous):
            out.append(previous)  # a block (a caption's text) and a span after it ("Photo: ...")
        tail, text = element.tail, element.text
        if tail and tail[0].isspace():
            if tail.isspace():
                following = element.getnext()
                if following is None or following.tag not in _INLINE_TAGS:
                    continue
        elif not (
            text and text[-1].isspace() and not text.isspace() and (len(element) == 0 or element.tag in _EMPHASIS)
        ):
            continue  # (an emphasis's text ending in a space before a child: "Follow us at <a>@igndeals</a>")
        parent = element.getparent()
        if parent is not None and parent.tag in _LOOSE:
            out.append(element)
    return out


def _image_src(img: Any) -> str:
    """The URL trafilatura takes for an image (its ``image_src``), without trying its file-name pattern on ``data:``
    URIs: they never match it, and a long one takes ~0.1 ms to fail."""
    from trafilatura.utils import is_image_file

    named = ("data-src", "src", *(a for a in img.attrib if a.startswith("data-src") and a != "data-src"))
    return next((v for v in (img.get(a, "") for a in named) if not v.startswith("data:") and is_image_file(v)), "")


def _truncated(element: Any) -> None:
    """A cut copy of the text of a sibling (class ``*-full``) taken out, and the whole one's toggle (a link to no
    page reading "less") with it."""
    siblings = [*element.itersiblings(preceding=True), *element.itersiblings()]
    whole = [e for e in siblings if any(c.endswith("-full") for c in (e.get("class") or "").split())]
    if not whole or not any(c.endswith("truncated") for c in (element.get("class") or "").split()):
        return
    _drop(element)
    for toggle in whole[0].xpath(".//a[not(@href)]"):
        if " ".join(toggle.itertext()).strip().lower().strip(".… ") in _TOGGLES:
            _drop(toggle)


_TOGGLES = {"less", "more", "show less", "show more", "read less", "read more", "see less", "see more", ""}


def _drop(element: Any) -> None:
    """The element taken out of the tree, its tail kept where it was."""
    element.text = None
    for child in list(element):
        element.remove(child)
    _unwrap(element)


def _spaced_block(element: Any) -> bool:
    """Whether ``element`` is a block of a div (or a caption...) with only spaces after it (before an inline one)."""
    if element is None or element.tag in _INLINE_TAGS or not isinstance(element.tag, str):
        return False
    return bool((element.tail or "x").isspace() and element.getparent().tag in _LOOSE)


def _keep_spaces(element: Any) -> None:
    """The space after ``element`` (or at the end of its text, then put after it; or before its first child) made
    SPACE."""
    text = element.text or ""
    if len(element) == 0 and text.strip() and text[-1].isspace():
        element.text, element.tail = text.rstrip(), " " + (element.tail or "")
    elif element.tag in _EMPHASIS and text.strip() and text[-1].isspace():
        element.text = text.rstrip() + SPACE  # before its first child
    tail = element.tail or ""
    if tail[:1].isspace():
        element.tail = SPACE + tail.lstrip()


def _as_code(pre: Any) -> None:
    """The ``pre``'s text (its ``<br>`` newlines) as the one ``code`` inside it: trafilatura takes a ``pre`` without
    ``code`` for a quote unless its text looks like code, and a quote's line breaks are whitespace, so preformatted
    text (a poem, a log, a shell session) came out as one run-on paragraph; and markup inside code (``<b>`` in a
    ``<pre><code>``) was rendered after the code block, out of it."""
    for br in pre.iter("br"):
        br.tail = "\n" + (br.tail or "")
    text = pre.xpath("string()")
    if not text.strip():
        return  # nothing to show: no empty code block
    for child in list(pre):
        pre.remove(child)
    code = pre.makeelement("code", {})
    code.text, pre.text = text, None
    pre.append(code)


def _apart(caption: Any) -> None:
    """A space between a caption's parts the page wrote with none between them (its text, then its credit:
    "treatment</span><span>Credit: EPA"), which the site's CSS sets apart (a block, a margin)."""
    for child in caption[:-1]:
        if not (child.tail or "").strip() and not (child.tail or "").endswith(" "):
            child.tail = (child.tail or "") + " "


def _paragraphs(div: Any) -> None:
    """The loose text of a ``div`` (or of a ``span`` outside paragraphs) laid out with ``<br><br>`` (old templates:
    appleinsider's articles) grouped into ``p`` elements, a new one at each run of two or more breaks and at each
    block child: trafilatura cuts such a ``div`` at its links instead, so 'the last i9 <a>MacBook Pro</a> was
    released' came out as two paragraphs, the second '[MacBook Pro](...)was released'."""
    nodes: list[Any] = [div.text] if div.text else []
    for child in list(div):
        tail, child.tail = child.tail, None
        nodes.append(child)
        if tail:
            nodes.append(tail)
        div.remove(child)
    div.text = None
    paragraph: Any = None
    for n, node in enumerate(nodes):
        if isinstance(node, str):
            if paragraph is None and node.strip():
                paragraph = _opened(div)
            if paragraph is not None:
                _add_text(paragraph, node)
        elif isinstance(node.tag, str) and node.tag in _BLOCK_TAGS:
            div.append(node)
            paragraph = None
        elif node.tag == "br" and (paragraph is None or _break_follows(nodes, n)):
            paragraph = None  # a run of breaks: the paragraph ends here (its other breaks go)
        else:
            paragraph = _opened(div) if paragraph is None else paragraph
            paragraph.append(node)


def _unlaid(table: Any) -> None:
    """A layout table's own table, rows and cells made ``div`` elements (the tables inside it stay): trafilatura
    renders it as a pipe table whose cells hold a whole article (thespacereview.com) or a site's sidebars
    (panarmenian.net), rows no Markdown reader takes for a table, and no chunk can cut."""
    for element in (table, *table.xpath("./* | ./tr/* | ./*/tr | ./*/tr/*")):
        element.tag = "div"


def _opened(div: Any) -> Any:
    paragraph = div.makeelement("p", {})
    div.append(paragraph)
    return paragraph


def _add_text(paragraph: Any, text: str) -> None:
    if len(paragraph):
        paragraph[-1].tail = (paragraph[-1].tail or "") + text
    else:
        paragraph.text = (paragraph.text or "") + text


def _break_follows(nodes: list[Any], n: int) -> bool:
    """Whether the next node after ``nodes[n]`` that is not whitespace is a ``<br>`` too."""
    for node in nodes[n + 1 :]:
        if not isinstance(node, str):
            return bool(node.tag == "br")
        if node.strip():
            return False
    return True  # breaks at the end: nothing more in this paragraph


_BLOCK_TAGS = {"address", "article", "aside", "blockquote", "details", "dd", "div", "dl", "dt", "fieldset"}
_BLOCK_TAGS |= {"figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup"}
_BLOCK_TAGS |= {"hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "ul", "script", "style", "noscript"}
_BLOCK_TAGS |= {"template", "iframe", "video", "audio", "center"}


def _footer_last(tfoot: Any) -> None:
    table = tfoot.getparent()
    table.remove(tfoot)
    head = table.find("thead")
    if head is None or _words(head) != _words(tfoot):
        table.append(tfoot)


def _words(element: Any) -> list[str]:
    return " ".join(element.itertext()).split()


def _lazy_image(img: Any) -> None:
    src = (img.get("src") or "").strip()
    url = next((v for v in (_usable(img.get(a)) for a in _LAZY_SRC) if v), "")
    url = url or next((v for v in (_widest(img.get(a)) for a in _LAZY_SRCSET) if v), "")
    if not url and (not src or src.startswith("data:")):
        url = _widest(img.get("srcset"))
    if not url:
        return
    for attribute in [a for a in img.attrib if a.startswith("data-src")]:
        del img.attrib[attribute]  # trafilatura would take one of these over src
    img.set("src", url)


def _usable(value: str | None) -> str:
    value = (value or "").strip()
    return "" if not value or value.startswith("data:") or any(c.isspace() for c in value) else value


def _widest(srcset: str | None) -> str:
    """The candidate of a ``srcset`` with the largest width (or density) descriptor; the first if none has one."""
    best, best_size = "", -1.0
    for match in _CANDIDATE.finditer(srcset or ""):
        url, descriptor = match.group(1).rstrip(","), match.group(2)
        if not _usable(url):
            continue
        size = _WIDTH.match(descriptor)
        value = float(size.group(1)) if size else 0.0
        if value > best_size:
            best, best_size = url, value
    return best


def _lift(element: Any) -> None:
    """The element taken out of the tree, its text, children and tail kept where they were."""
    previous, parent, text = element.getprevious(), element.getparent(), element.text or ""
    element.text = None
    if previous is not None:
        previous.tail = (previous.tail or "") + text
    else:
        parent.text = (parent.text or "") + text
    for child in list(element):
        element.addprevious(child)  # with its tail
    _unwrap(element)


def _unwrap(element: Any) -> None:
    """The element taken out of the tree, its text and tail kept where they were."""
    parent = element.getparent()
    if parent is None:
        return
    text = (element.text or "") + (element.tail or "")
    element.tail = None
    for child in element:  # an empty link may still hold an empty span or an icon
        text += child.tail or ""
    previous = element.getprevious()
    if previous is not None:
        previous.tail = (previous.tail or "") + text
    else:
        parent.text = (parent.text or "") + text
    parent.remove(element)
