"""``--markdown`` and ``--chunks`` on the 181 real corpus pages: quality against ``--text`` and CPU per page.

Quality: the token F1 of the Markdown's text (rendered back to text by markdown-it-py, so link targets, emphasis
marks and table pipes do not count) against the plain main text ``--text`` gives for the same page. CPU: the best of
``--rounds`` passes over the corpus, per page, for each way of making Markdown:

- ``text``: ``--text`` alone (trafilatura's plain text), the baseline;
- ``markdown``: what ``--markdown`` runs (trafilatura with links, images and formatting, rendered as Markdown by
  trafilatura from its own tree, plus the plain text from the same tree);
- ``markdownify`` / ``html2text`` (only if importable, e.g. ``PYTHONPATH=/tmp/mdify``): trafilatura's main content
  as HTML, converted by that library (the other design the issue names);
- ``chunks``: cutting the ``markdown`` output into chunks of ``--chunk-size`` characters (on its own).

    .venv/bin/python benchmarks/bench_markdown.py [--rounds N] [--corpus DIR] [--chunk-size 2000]
"""

from __future__ import annotations

import argparse
import gzip
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_parse import _DEFAULT_CORPUS

from webtrawl.extract.chunks import chunk_markdown
from webtrawl.extract.document import Document
from webtrawl.extract.text import check_available, main_text

_CAP = 2 * 1024 * 1024


def _docs(corpus: Path) -> list[Document]:
    urls = dict(line.split("\t", 1) for line in (corpus / "urls.tsv").read_text().splitlines()[1:] if "\t" in line)
    docs = []
    for path in sorted((corpus / "pages").glob("*.html.gz")):
        url = urls.get(path.name.split(".")[0], "https://example.org/").strip()
        html = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
        docs.append(
            Document(url=url, final_url=url, status=200, headers=[], content_type="text/html", depth=0, text=html)
        )
    return docs


def _tokens(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def _f1(found: str, reference: str) -> float:
    a, b = _tokens(found), _tokens(reference)
    common = sum((a & b).values())
    if not a or not b:
        return 1.0 if not a and not b else 0.0
    precision, recall = common / sum(a.values()), common / sum(b.values())
    return 0.0 if not common else 2 * precision * recall / (precision + recall)


def _markdown_text(markdown: str) -> str:
    """The text a reader sees in rendered Markdown (no URLs, no marks)."""
    from lxml import html as lxml_html
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").enable("table").render(markdown)
    return str(lxml_html.fromstring(f"<div>{rendered}</div>").text_content()) if rendered.strip() else ""


def _converters() -> dict[str, Callable[[str, str], str]]:
    """Other designs: trafilatura's main content as HTML, then a Markdown converter library."""
    import trafilatura

    found: dict[str, Callable[[str, str], str]] = {}

    def main_html(html: str, url: str) -> str:
        out = trafilatura.extract(
            html, url=url, output_format="html", include_links=True, include_images=True, include_formatting=True
        )
        return out or ""

    try:
        import markdownify

        found["markdownify"] = lambda html, url: markdownify.markdownify(main_html(html, url), heading_style="ATX")
    except ImportError:
        pass
    try:
        import html2text

        def _h2t(html: str, url: str) -> str:
            conv = html2text.HTML2Text(baseurl=url, bodywidth=0)
            return str(conv.handle(main_html(html, url)))

        found["html2text"] = _h2t
    except ImportError:
        pass
    return found


def _structure(outs: list[str]) -> str:
    if not outs:
        return "-"
    patterns = (r"^#{1,6} ", r"^\s*(?:[-*+]|\d+[.)]) ", r"^\|.*\|\s*$", r"(?<!!)\[[^\]]*\]\(")
    means = [statistics.mean(len(re.findall(p, o, re.M)) for o in outs) for p in patterns]
    return ", ".join(f"{m:.1f}" for m in means)


def _timed(rounds: int, docs: list[Document], fn: Callable[[Document], Any]) -> tuple[float, list[Any]]:
    best, outputs = float("inf"), []
    for _ in range(rounds):
        start = time.process_time()
        outputs = [fn(doc) for doc in docs]
        best = min(best, time.process_time() - start)
    return best * 1000 / len(docs), outputs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--corpus", type=Path, default=_DEFAULT_CORPUS)
    ap.add_argument("--chunk-size", type=int, default=2000)
    args = ap.parse_args()
    check_available("--markdown")
    docs = _docs(args.corpus)
    ms_text, texts = _timed(args.rounds, docs, lambda d: main_text(d, _CAP).text)
    ms_md, found = _timed(args.rounds, docs, lambda d: main_text(d, _CAP, markdown=True))
    rows: list[tuple[str, float, list[float] | None, list[float] | None, list[str]]] = [
        ("text (--text alone)", ms_text, None, None, [])
    ]
    md_f1 = [_f1(_markdown_text(f.markdown), t) for f, t in zip(found, texts, strict=True)]
    same_text = [_f1(f.text, t) for f, t in zip(found, texts, strict=True)]
    rows.append(("markdown (trafilatura's own Markdown)", ms_md, md_f1, same_text, [f.markdown for f in found]))
    for name, convert in _converters().items():
        ms, outs = _timed(args.rounds, docs, lambda d, c=convert: c(str(d.text), d.final_url))  # type: ignore[misc]
        f1s = [_f1(_markdown_text(o), t) for o, t in zip(outs, texts, strict=True)]
        rows.append((f"trafilatura HTML + {name}", ms, f1s, None, outs))
    markdowns = [(d.final_url, f.markdown) for d, f in zip(docs, found, strict=True)]
    start = time.process_time()
    for _ in range(args.rounds):
        chunked = [chunk_markdown(url, md, args.chunk_size) for url, md in markdowns]
    ms_chunks = (time.process_time() - start) * 1000 / args.rounds / len(docs)
    print(f"{len(docs)} pages, best of {args.rounds} rounds, CPU ms per page")
    print(
        "| way | ms CPU/page | token F1 vs --text: mean / median / min "
        "| headings, list items, table rows, links per page |"
    )
    print("|---|---|---|---|")
    for name, ms, f1s, same, outs in rows:
        quality = f"{statistics.mean(f1s):.3f} / {statistics.median(f1s):.3f} / {min(f1s):.3f}" if f1s else "-"
        if same:
            quality += f" (its plain text vs --text alone: {statistics.mean(same):.3f})"
        print(f"| {name} | {ms:.1f} | {quality} | {_structure(outs)} |")
    n_chunks = [len(c) for c in chunked]
    print(
        f"chunks of {args.chunk_size} chars: {ms_chunks:.3f} ms CPU/page, {statistics.mean(n_chunks):.1f} chunks per "
        f"page (max {max(n_chunks)}), Markdown {statistics.mean(len(m) for _, m in markdowns):.0f} chars per page"
    )


if __name__ == "__main__":
    main()
