"""Parser CPU per page with extraction, on the 181 real corpus pages (``process_page`` as in bench_parse.py).

Modes: no extraction; a 5-field CSS rules file (lexbor, on the tree the parser already built); the same 5 fields
forced through parsel (lxml: the second parse); the same 5 fields as XPath; a Scrapy-style callback with the same 5
selectors; ``--text`` (trafilatura). Each mode's CPU time per page is the best of ``--rounds``; the overhead is
against no extraction.

    .venv/bin/python benchmarks/bench_extract.py [--rounds N] [--text-rounds N] [--corpus DIR] [--modes a,b]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench_parse import _DEFAULT_CORPUS, load_pages, make_context

from webtrawl.config import ExtractionOptions
from webtrawl.extract import build_extraction
from webtrawl.extract.rules import RulesExtractor
from webtrawl.messages import Page
from webtrawl.parse import ParseContext, process_page

CSS = {
    "title": "title::text",
    "headline": "h1 ::text",
    "image": "meta[property='og:image']::attr(content)",
    "canonical": "link[rel=canonical]::attr(href)",
    "first_paragraph": "article p::text",
}
XPATH = {
    "title": "//title/text()",
    "headline": "//h1//text()",
    "image": "//meta[@property='og:image']/@content",
    "canonical": "//link[@rel='canonical']/@href",
    "first_paragraph": "//article//p/text()",
}
CALLBACK = """
def parse(page):
    yield {
        "title": page.css("title::text").get(),
        "headline": page.css("h1 ::text").get(),
        "image": page.css("meta[property='og:image']::attr(content)").get(),
        "canonical": page.css("link[rel=canonical]::attr(href)").get(),
        "first_paragraph": page.css("article p::text").get(),
    }
"""
MODES = ("none", "css", "css-parsel", "xpath", "callback", "text")


def _rules(folder: Path, kind: str, fields: dict[str, str]) -> Path:
    path = folder / f"{kind}.toml"
    lines = ["[[rule]]", "url = '.'", "[rule.fields]"] + [f'{k} = "{kind}:{v}"' for k, v in fields.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def _context(mode: str, folder: Path) -> ParseContext:
    ctx = make_context()
    if mode == "none":
        return ctx
    if mode in ("css", "css-parsel"):
        opts = ExtractionOptions(extract=str(_rules(folder, "css", CSS)))
    elif mode == "xpath":
        opts = ExtractionOptions(extract=str(_rules(folder, "xpath", XPATH)))
    elif mode == "callback":
        (folder / "bench_spider.py").write_text(CALLBACK)
        opts = ExtractionOptions(extract=f"{folder / 'bench_spider.py'}:parse")
    else:
        opts = ExtractionOptions(text=True)
    ctx.extraction = build_extraction(opts)
    if mode == "css-parsel":  # the same selectors through parsel/lxml: what a second parse costs
        assert ctx.extraction is not None and isinstance(ctx.extraction.extractor, RulesExtractor)
        for rule in ctx.extraction.extractor.rules:
            for field in rule.fields:
                field.select.engine = "parsel"
    return ctx


def _round(pages: list[Page], ctx: ParseContext) -> tuple[float, int]:
    items = 0
    cpu = time.process_time()
    for page in pages:
        out = process_page(page, ctx)
        assert out.record.error is None, out.record.error_detail
        items += len(out.items)
    return time.process_time() - cpu, items


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--text-rounds", type=int, default=1)
    ap.add_argument("--corpus", type=Path, default=_DEFAULT_CORPUS)
    ap.add_argument("--modes", default=",".join(MODES))
    args = ap.parse_args(argv)
    pages = load_pages(args.corpus)
    base = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.modes.split(","):
            ctx = _context(mode, Path(tmp))
            _round(pages[:20], ctx)  # warm-up: lazy imports, caches
            best, items = float("inf"), 0
            for _ in range(args.text_rounds if mode == "text" else args.rounds):
                cpu, items = _round(pages, ctx)
                best = min(best, cpu)
            ms = 1000 * best / len(pages)
            base = ms if mode == "none" else base
            extra = f", +{ms - base:.3f} ms (+{100 * (ms - base) / base:.0f}%) over no extraction" if base else ""
            print(
                f"{mode:>10}: {ms:.3f} ms CPU/page, {len(pages) / best:.0f} pages/s per process{extra}; {items} items"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
