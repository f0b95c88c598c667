"""A parse context with extraction, as a parser process builds it from the config."""

from __future__ import annotations

from typing import Any

from tests.extract.corpus import TEXT_TIMEOUT
from tests.parse.helpers import make_ctx
from webtrawl.config import ExtractionOptions
from webtrawl.extract import build_extraction
from webtrawl.messages import Page
from webtrawl.parse import ParseContext, Processed, process_page


def extract_ctx(**options: Any) -> ParseContext:
    """A test that is not about time limits gets a long --extract-timeout: a loaded CI machine took one small page's
    first extraction past the 5 s default (test_noisy_bytes, load 13)."""
    options.setdefault("extract_timeout", TEXT_TIMEOUT)
    ctx = make_ctx()
    ctx.extraction = build_extraction(ExtractionOptions(**options))
    return ctx


def run(page: Page, **options: Any) -> Processed:
    return process_page(page, extract_ctx(**options))


def markdown_and_text(page: Page, **options: Any) -> tuple[str, str]:
    """The page's ``--markdown`` and ``--text``, from one extraction."""
    rec = run(page, text=True, markdown=True, **options).record
    assert isinstance(rec.markdown, str) and isinstance(rec.text, str)
    return rec.markdown, rec.text
