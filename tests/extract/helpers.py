"""A parse context with extraction, as a parser process builds it from the config."""

from __future__ import annotations

from typing import Any

from tests.parse.helpers import make_ctx
from webtrawl.config import ExtractionOptions
from webtrawl.extract import build_extraction
from webtrawl.messages import Page
from webtrawl.parse import ParseContext, Processed, process_page


def extract_ctx(**options: Any) -> ParseContext:
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
