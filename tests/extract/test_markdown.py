"""``--markdown``: the main content as Markdown, on a page built for it and on the corpus's article pages."""

from __future__ import annotations

import re
from collections import Counter

import msgspec

from tests.extract.corpus import CORPUS, TEXT_TIMEOUT, corpus_rows, needs_corpus
from tests.extract.helpers import extract_ctx, run
from tests.parse.helpers import make_page
from webtrawl.parse import process_page

_FILLER = "This sentence is here so that the extractor sees a real article with enough running text in it. "
PAGE = f"""<html><head><title>Guide</title></head><body>
<nav><a href="/">Home</a> <a href="/about">About us</a> <a href="/shop">Shop</a></nav>
<div id="cookie-banner" class="cookie-consent">We use cookies to improve your experience.
<button>Accept all</button></div>
<article><h1>The guide</h1><p>Intro with <b>bold words</b> and <em>slanted words</em> and a
<a href="/docs/page.html">relative link</a>. {_FILLER * 2}</p>
<h2>Lists</h2><p>{_FILLER}</p>
<ul><li>first point</li><li>second point with <a href="https://other.example/y">an outside link</a></li></ul>
<ol><li>step one</li><li>step two</li></ol>
<h2>Prices</h2><p>{_FILLER}</p>
<table><tr><th>Fruit</th><th>Price</th></tr><tr><td>Apple</td><td>1.20</td></tr><tr><td>Pear</td><td>2.30</td></tr></table>
<pre><code>def answer():
    return 42
</code></pre>
<p>A picture: <img src="img/a.png" alt="A fruit bowl"> {_FILLER}</p>
<h3>Small print</h3><p>{_FILLER * 2}</p>
</article>
<footer>Copyright 2024 Example Shop Ltd. All rights reserved. <a href="/privacy">Privacy policy</a></footer>
</body></html>""".encode()


def test_markdown_keeps_structure_and_makes_urls_absolute() -> None:
    rec = run(make_page(PAGE, url="https://shop.example/guides/one.html"), markdown=True).record
    md = rec.markdown
    assert isinstance(md, str) and rec.error is None
    assert re.search(r"^# The guide$", md, re.M) and re.search(r"^## Prices$", md, re.M)
    assert re.search(r"^### Small print$", md, re.M)
    assert "**bold words**" in md and "*slanted words*" in md
    assert "[relative link](https://shop.example/docs/page.html)" in md
    assert "[an outside link](https://other.example/y)" in md
    assert "![A fruit bowl](https://shop.example/guides/img/a.png)" in md
    assert re.search(r"^- first point$", md, re.M) and re.search(r"^1\. step one$", md, re.M)
    assert re.search(r"^\| Fruit \| Price \|", md, re.M) and re.search(r"^\|---\|---\|$", md, re.M)
    assert re.search(r"^\| Pear \| 2\.30 \|", md, re.M)
    assert "```\ndef answer():\n    return 42\n```" in md
    for boilerplate in ("About us", "cookies", "Accept all", "Copyright", "Privacy policy"):
        assert boilerplate not in md


def test_markdown_alone_adds_no_text_fields_and_text_alone_no_markdown() -> None:
    plain = msgspec.to_builtins(run(make_page(PAGE), markdown=True).record)
    assert "markdown" in plain and "text" not in plain and "language" not in plain
    assert "markdown" not in msgspec.to_builtins(run(make_page(PAGE), text=True).record)


def test_text_with_markdown_is_the_same_text_without_link_targets() -> None:
    alone = run(make_page(PAGE, url="https://shop.example/g"), text=True).record.text
    both = run(make_page(PAGE, url="https://shop.example/g"), text=True, markdown=True).record
    assert isinstance(alone, str) and isinstance(both.text, str)
    assert " ".join(both.text.split()) == " ".join(alone.split())
    assert "https://" not in both.text and "https://shop.example/docs/page.html" in str(both.markdown)


@needs_corpus
def test_markdown_of_every_corpus_article_has_its_text() -> None:
    ctx = extract_ctx(text=True, markdown=True, extract_timeout=TEXT_TIMEOUT)
    structured = 0
    for page_id, url in corpus_rows():
        gz = (CORPUS / "pages" / f"{page_id}.html.gz").read_bytes()
        rec = process_page(make_page(gz, url=url, headers=[("Content-Encoding", "gzip")]), ctx).record
        assert rec.error is None, (url, rec.error_detail)
        assert isinstance(rec.markdown, str) and isinstance(rec.text, str)
        words, md_words = (
            Counter(re.findall(r"\w+", rec.text.lower())),
            Counter(re.findall(r"\w+", rec.markdown.lower())),
        )
        assert sum((words & md_words).values()) >= 0.95 * sum(words.values()), url  # the text's words are all there
        assert not re.search(r"\]\((?!<?(?:[a-z][a-z0-9+.-]*:|#))[^)]", rec.markdown), url  # absolute links
        structured += bool(re.search(r"^(#{1,6} |- |\d+\. |\|)", rec.markdown, re.M))
    assert structured > len(corpus_rows()) // 2
