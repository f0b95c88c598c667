"""``--text``: each HTML page's main text, title, author, date and language, by trafilatura.

trafilatura is an optional extra (``pip install 'webtrawl[text]'``): it pulls in lxml helpers and date parsing most
crawls do not need. Each page is capped twice: the HTML it reads (``--text-max-bytes``, the rest is cut) and the time
it may take (``--extract-timeout``, by the same alarm as user code).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from webtrawl.errors import InputError
from webtrawl.extract.document import Document
from webtrawl.optional import optional_import


@dataclass(slots=True)
class MainText:
    text: str = ""
    title: str = ""
    author: str = ""
    date: str = ""
    language: str = ""


def check_available() -> None:
    optional_import("trafilatura", needed_by="--text", extra="text", error=InputError)
    logging.getLogger("trafilatura").setLevel(logging.CRITICAL)  # it warns about every page it finds empty
    logging.getLogger("htmldate").setLevel(logging.CRITICAL)


def main_text(doc: Document, max_chars: int) -> MainText:
    import trafilatura

    html: Any = doc.text[:max_chars]
    if "selector" in doc.__dict__ and len(doc.text) <= max_chars:
        html = doc.selector.root  # lxml already parsed this page (XPath rules, callback): no third parse
    found = trafilatura.bare_extraction(
        html, url=doc.final_url, with_metadata=True, include_comments=False, favor_precision=False
    )
    if found is None:
        return MainText(language=doc.language)
    get = found.as_dict().get if hasattr(found, "as_dict") else found.get
    return MainText(
        text=(get("text") or "")[:max_chars],
        title=get("title") or "",
        author=get("author") or "",
        date=get("date") or "",
        language=get("language") or doc.language,
    )
