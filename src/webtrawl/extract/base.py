"""The extraction stage's protocol: an :class:`Extractor` turns one page into items (and maybe links to follow).

Extractors are built inside the parser process from what the config names (``--extract rules.toml`` or
``--extract package.module:function``) and run on the page the parser already decoded and parsed, so the HTML is
parsed by lexbor once for links and CSS rules; XPath and the callback's selectors parse it a second time with lxml
(parsel), only when used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from webtrawl.extract.document import Document


class Follow:
    """A link a callback wants followed (a plain string works too); relative URLs are resolved against the page."""

    __slots__ = ("url",)

    def __init__(self, url: str | None) -> None:
        self.url = url

    def __repr__(self) -> str:
        return f"Follow({self.url!r})"


@dataclass(slots=True)
class ExtractResult:
    items: list[dict[str, Any]] = field(default_factory=list)
    # None: follow the page's own links as usual; a list: follow only these (raw hrefs, resolved by the parser)
    links: list[str] | None = None
    extra_links: list[str] = field(default_factory=list)  # followed in addition to the page's links


class Extractor(Protocol):
    """Items from one page. Raises on bad user code; the caller records that on the page as an extract-error."""

    name: str  # for log lines

    def extract(self, doc: Document) -> ExtractResult: ...
