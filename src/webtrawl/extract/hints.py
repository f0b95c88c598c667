"""What a fetcher takes from the user's extractor (``--extract``): request headers and "nothing found".

The extractor is asked through :class:`~webtrawl.extract.base.RequestHints`, whatever its class: a rules file
(``extract/rules.py``) implements it, a class named by ``--extract package.module:Class`` may, a callback function
never does (user code with effects is never run here). Built inside the fetcher process from the config
(``from_config``); without such an extractor nothing is loaded.

- **Headers per rule**: a rule's ``headers = {...}`` are sent with every request whose URL its ``url`` pattern
  matches, over HTTP and in the browser (both go through the process's :class:`~webtrawl.fetch.client.HttpClient`,
  which asks :meth:`RuleHints.headers` per request). Every matching rule adds its headers, an earlier rule's value
  winning for a name given twice; ``--header`` is overridden by a rule for the same name.
- **``--render auto`` renders when the rules found nothing**: the fetcher runs the page's rule on the HTTP answer
  (the rule the parser would run: the first whose ``url`` and ``content_type`` match) and renders the page when it
  yields no item, an item's ``required`` fields being empty counting as none. Deciding here, where the shell
  heuristic already decides, keeps the data flowing one way and nothing counted twice: the page is rendered under
  the same lease with its HTTP answer as the navigation response, so the host sees one request for it, the parser
  one page (one record with ``render_reason: "no-items"``, its items once), and a kill -9 loses nothing (the lease
  is taken back as for any fetch). The price is running that rule in the fetcher too: twice for such pages (here
  on the HTTP answer, in the parser on the DOM), and once more for pages whose rule does find items (those are not
  rendered). Rules that fail or run past ``--extract-timeout`` here do not cause a render: the parser records the
  failure on the page.

The fetch stage does not import this module (fetch runs before extract): it asks a
:class:`~webtrawl.fetch.route.PageHints`, and whoever starts a fetcher hands it this class's ``from_config``
(``FetcherArgs.hints``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from webtrawl.config import ExtractionOptions, RenderOptions
from webtrawl.formats.encoding import choose_encoding, content_type_of

if TYPE_CHECKING:
    from webtrawl.extract.base import RequestHints


class RuleHints:
    def __init__(self, extractor: RequestHints, *, auto: bool, timeout: float) -> None:
        self.extractor = extractor
        self.auto = auto  # --render auto: check whether the extractor finds items
        self.timeout = timeout
        self.has_headers = extractor.sends_headers

    @classmethod
    def from_config(cls, extraction: ExtractionOptions, rendering: RenderOptions) -> RuleHints | None:
        """The hints of ``--extract`` when the fetcher needs any (headers, or ``--render auto``)."""
        spec, auto = extraction.extract, rendering.render == "auto"
        if not spec:
            return None
        path = Path(spec).expanduser()
        if path.is_file() and not auto and not _may_have_headers(path):
            return None  # a fetcher that needs nothing of the rules does not import parsel and lxml for them
        from webtrawl.extract import RequestHints, load_extractor

        extractor = load_extractor(spec)
        if not isinstance(extractor, RequestHints):
            return None
        hints = cls(extractor, auto=auto, timeout=extraction.extract_timeout)
        return hints if hints.auto or hints.has_headers else None

    def headers(self, url: str) -> dict[str, str]:
        """The headers the extractor adds to a request for ``url`` (empty if none)."""
        return self.extractor.headers_for(url)

    def no_items(self, url: str, status: int, headers: list[tuple[str, str]], payload: bytes) -> bool:
        """With ``auto``: whether the extractor finds no item in the HTTP answer (``payload``: its decoded body).
        False when the page is not for it, or when it fails (the parser records that)."""
        if not self.auto or not self.extractor.wants(url):
            return False
        from webtrawl.extract.document import Document
        from webtrawl.extract.limits import TimeLimit, time_limit

        content_type = content_type_of([v for k, v in headers if k.lower() == "content-type"]) or "text/html"
        codec, _, bom = choose_encoding(payload, content_type)
        text = payload[bom:] if codec == "utf-8" else payload[bom:].decode(codec, "replace")
        mime = content_type.split(";", 1)[0].strip().lower()
        doc = Document(url=url, text=text, status=status, headers=headers, content_type=mime)
        try:
            with time_limit(self.timeout):
                return self.extractor.finds_no_items(doc)
        except (Exception, TimeLimit):
            return False


def _may_have_headers(path: Path) -> bool:
    """A byte search: a rules file without the word has no rule headers (one with it is loaded to know)."""
    try:
        return b"headers" in path.read_bytes()
    except OSError:
        return True  # load_rules reports it
