"""What is taken out of the page's tree before its main text is extracted: what ``--text-exclude`` names
(``excluding``, ``without``), and what a browser does not show (``unseen``):

- An element hidden by its own markup: the ``hidden`` attribute, ``aria-hidden="true"``, or an inline style of
  ``display: none`` or ``visibility: hidden``. trafilatura prunes most of these only on its main path, and puts them
  all back when they hold much of the candidate's text, so a page's schema.org copy of its article, hidden for
  crawlers (Business Insider), came out after the article: its title, dates, logo URL and the whole text again.
- A popup inside running text (a paragraph, a list item, a cell, a heading): an element whose class names a hover
  card, a tooltip or a popup (``rollover-people-block``, ``tooltiptext``, ``popover``), which the site's CSS hides
  until a reader hovers over the word before it. The Hill put a politician's photo, name and three headlines of
  theirs into the middle of a sentence.

- An element for screen readers only (``sr-only``, ``visually-hidden``, ``screen-reader-text``, ``off-screen``):
  the BBC's "Image caption" label before each caption, "opens in a new window" after a link.

An element holding most of the page's text is kept all the same: a page hidden as a whole until its scripts run (an
anti-flicker wrapper, a body shown by a script) would otherwise lose everything.
"""

from __future__ import annotations

import re
from copy import deepcopy
from typing import Any

# The candidates, found in one pass over the tree (0.9 ms a corpus page; a union of two passes, or the popups' test on
# the descendants of each paragraph, cost twice that), then checked in Python: a style that hides, a popup's class in
# running text.
_RUNNING_TAGS = {"p", "li", "td", "th", "dd", "h1", "h2", "h3"}
_HINTS = ("pop", "tip", "roll", "flyout", "hovercard", "sr-only", "hidden", "off-screen", "offscreen", "reader")
_POPUP_HINT = " or ".join(f"contains(., '{w}')" for w in _HINTS)
_LOWER = "translate(., 'DEHINO', 'dehino')"  # what "none" and "hidden" are written with
_CANDIDATES = (
    "descendant::*[@hidden or @aria-hidden='true'"
    f" or @style[contains({_LOWER}, 'none') or contains({_LOWER}, 'hidden')] or @class[{_POPUP_HINT}]]"
)
_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!\s*important\s*)?(?:;|$)", re.I)
# A class token of a popup: a word of it (split at - and _) names one, possibly followed by a word for one of its
# parts; not "has-tooltip" or "popup-link" (the word or link a reader hovers over, which stays).
_PART = "block|box|body|card|content|inner|panel|text|wrapper|wrap|container"
_POPUP = re.compile(
    rf"(?:^|\s)(?!has-|with-|show-|open-|toggle-)(?:[\w-]*[-_])?"
    rf"(?:popup|popover|tooltip|tooltiptext|hovercard|flyout|rollover(?:[-_][\w-]+)?[-_](?:{_PART}))"
    rf"(?:[-_](?:{_PART}))?(?:\s|$)",
    re.I,
)
# A class that shows an element to screen readers only ("Image caption" before each of the BBC's captions, "opens in
# a new window" after links): not what a reader of the page sees.
_READER_ONLY = re.compile(
    r"(?:^|\s)(?:sr-only|visually-?hidden|screen-?reader-?(?:text|only)|off-?screen|a11y-hidden)(?:\s|$)", re.I
)
_MOST = 2 / 3  # an element with more of the page's text is kept: a hidden copy of the article (schema.org) is half
_SMALL = 200  # an element with at most this much text (scripts' too) needs no comparison with the page's


def unseen(tree: Any, shared: bool) -> Any:
    """``tree`` (an lxml root) without the elements a browser does not show (see above), their tails kept; copied
    first if ``shared`` and one is taken out."""
    found = _found(tree)
    if not found:
        return tree
    if shared:
        tree = deepcopy(tree)
        found = _found(tree)
    _take_out(found)
    return tree


def excluding(selectors: tuple[str, ...]) -> str:
    """The XPath of the elements ``--text-exclude`` leaves out of the main text ("" for none)."""
    from cssselect import HTMLTranslator

    return " | ".join(HTMLTranslator().css_to_xpath(selector) for selector in selectors)


def without(tree: Any, xpath: str, shared: bool) -> Any:
    """``tree`` without the elements ``xpath`` finds, their tails kept (copied first if ``shared`` and one is)."""
    found = tree.xpath(xpath)
    if not found:
        return tree
    if shared:
        tree = deepcopy(tree)
        found = tree.xpath(xpath)
    _take_out(found)
    return tree


def _take_out(elements: list[Any]) -> None:
    for element in elements:
        parent = element.getparent()
        if parent is None:  # the root itself, or inside an element taken out already
            continue
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + (element.tail or "")
        else:
            parent.text = (parent.text or "") + (element.tail or "")
        parent.remove(element)


def _found(tree: Any) -> list[Any]:
    found = [element for element in tree.xpath(_CANDIDATES) if _hidden(element)]
    if not found:
        return []
    whole = -1
    kept = []
    for element in found:
        if len(element.xpath("string()")) > _SMALL:
            whole = _chars(tree) if whole < 0 else whole
            if _chars(element) > whole * _MOST:
                continue
        kept.append(element)
    return kept


def _hidden(element: Any) -> bool:
    if element.tag in ("html", "body") or not isinstance(element.tag, str):
        return False
    get = element.get
    if get("hidden") is not None or get("aria-hidden") == "true" or _STYLE.search(get("style") or ""):
        return True
    classes = get("class") or ""
    if classes and _READER_ONLY.search(classes):
        return True
    return bool(classes and _POPUP.search(classes) and any(up.tag in _RUNNING_TAGS for up in element.iterancestors()))


def _chars(element: Any) -> int:
    """How much text ``element`` shows: its scripts' and styles' text (a page's data, often larger than it) aside."""
    return sum(map(len, element.xpath(".//text()[not(parent::script or parent::style)]")))
