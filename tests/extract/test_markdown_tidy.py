"""``--markdown`` and ``--text`` on a page whose source indentation trafilatura's formatting extraction keeps: the
Markdown's headings and table rows start their lines (else they read as a code block, and a chunk loses its
heading), and the text has no lines of indentation."""

from __future__ import annotations

import re

from tests.extract.helpers import run
from tests.parse.helpers import make_page
from webtrawl.extract.chunks import chunk_markdown

# The shape of a sports site's stats page (minimised from a real one, names replaced); ~ marks a line of two spaces.
INDENTED = """<html>
~
  <body>
~
<div>
~
    <main>
~
  <article>
~
<div>
  <div>
~
<div>
  <p>Below, we analyze the snap counts and stats on defense for the home team in the Week 11 game.</p>
~
<div>
<div>
~
  <table>
~
    <tbody>
~
        <tr>
~
            <td>No stats registered.</td>
~
        </tr>
~
    </tbody>
  </table>
~
</div>
</div>
~
<div>
<div>
~
    <h3>Safety</h3>
~
  <table>
~
    <tbody>
~
        <tr>
~
            <td>45%</td>
~
            <td>1 tackle (1 combined).</td>
~
        </tr>
~
    </tbody>
  </table>
~
</div>
</div>
<ul>
~
<li>
and  both stepped up to the plate and did a good job. But that was against , a below average quarterback.
Fortunately, <a href="/players/7">Miller</a> will be back, and Smith was never viewed as a long-term
answer at strong safety. I don't know what direction the coach will go at strong safety, but I like the
way  has played when given opportunities. When <strong>Eric Jones</strong> returns from injury, it'll
probably be his starting job the rest of the way.</li>
</ul>
</div>
~
  </div>
~
</div>
~
  </article>
</main>
~
  </div>
~
    </body></html>""".replace("~", "  ").encode()


def test_headings_and_table_rows_start_their_lines_and_the_text_has_no_indentation() -> None:
    rec = run(make_page(INDENTED, url="https://news.example/a"), text=True, markdown=True).record
    md, text = rec.markdown, rec.text
    assert isinstance(md, str) and isinstance(text, str) and rec.error is None
    assert re.search(r"^### Safety$", md, re.M), md
    assert re.search(r"^\| 45% \| 1 tackle \(1 combined\)\. \| ?\n\|---\|---\|$", md, re.M), md  # a table, no code
    assert not re.search(r"^[ \t]+", md, re.M), md  # no indented line, no line of spaces
    assert [c.heading_path for c in chunk_markdown("https://news.example/a", md, 2000)][-1] == ("Safety",)
    assert "Safety" in text.splitlines() and not re.search(r"^\s+|\s{2,}$", text, re.M), text


_FILLER = "This sentence is here so that the extractor sees a real article with enough running text in it. "
NESTED = f"""<html><body><article><h1>Setup</h1><p>{_FILLER * 3}</p>
<ul><li>one<ul><li>nested a<ul><li>deeper</li></ul></li></ul></li><li>two</li></ul>
<pre><code>def f():
    x = 1
    return x
</code></pre><p>{_FILLER * 3}</p></article></body></html>""".encode()


def test_nested_lists_and_code_keep_their_indentation() -> None:
    md = run(make_page(NESTED, url="https://docs.example/setup"), markdown=True).record.markdown
    assert isinstance(md, str)
    assert "- one\n  - nested a\n    - deeper\n- two" in md, md
    assert "```\ndef f():\n    x = 1\n    return x\n```" in md, md


def _article(paragraph: str) -> bytes:
    return f"""<html><body><article><h1>Prices</h1><p>{_FILLER * 3}</p><p>{paragraph}</p>
<pre><code>def f():
    return 1
</code></pre><p>{_FILLER * 3}</p></article></body></html>""".encode()


def test_a_page_whose_source_only_changed_its_line_breaks_keeps_its_markdown_and_chunk_ids() -> None:
    url = "https://docs.example/prices"
    before = run(make_page(_article("Prices stay the <b>same</b> all year."), url=url), markdown=True).record
    after = run(
        make_page(_article("Prices  stay\n      the <b>same</b>\n      all year."), url=url), markdown=True
    ).record
    assert isinstance(before.markdown, str) and "Prices stay the **same** all year." in before.markdown
    assert after.markdown == before.markdown
    assert chunk_markdown(url, after.markdown, 200) == chunk_markdown(url, before.markdown, 200)
