"""The shared corpus of real pages (``../shared/corpus`` of the checkout or of a parent), as parser input."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.parse.helpers import make_page
from webtrawl.messages import Page

CORPUS = next(
    (p / "shared" / "corpus" for p in Path(__file__).resolve().parents if (p / "shared" / "corpus").is_dir()),
    Path("/nonexistent"),
)
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="corpus not present")
HERE = Path(__file__).resolve().parent
RULES = HERE / "corpus_rules.toml"
SPIDERS = HERE / "spiders.py"
# --extract-timeout for tests that check what the main text of every real page is, not how long it takes: under a
# loaded CI machine (load 13-15) one page ran past the 5 s default.
TEXT_TIMEOUT = 300.0


def corpus_rows() -> list[tuple[str, str]]:
    """(page id, URL) of every corpus page."""
    rows = (CORPUS / "urls.tsv").read_text().splitlines()[1:]
    return [(page_id, url) for page_id, url in (row.split("\t", 1) for row in rows)]


def corpus_file(url_part: str, nth: int = 0) -> tuple[Path, str]:
    """The gzipped file and URL of the ``nth`` corpus page whose URL contains ``url_part``."""
    found = [(CORPUS / "pages" / f"{pid}.html.gz", url) for pid, url in corpus_rows() if url_part in url]
    return found[nth]


def corpus_page(url_part: str, nth: int = 0) -> Page:
    path, url = corpus_file(url_part, nth)
    return make_page(path.read_bytes(), url=url, headers=[("Content-Encoding", "gzip")])
