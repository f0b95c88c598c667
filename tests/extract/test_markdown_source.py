"""``--markdown`` shows what a browser shows where the page's source says it another way: lazy-loaded images (their
real URL in a ``data-*`` attribute or a ``srcset``), text right after an empty link, blank lines in code."""

from __future__ import annotations

import re
from pathlib import Path

from markdown_it import MarkdownIt

from tests.extract.corpus import TEXT_TIMEOUT, corpus_page, needs_corpus
from tests.extract.helpers import run
from tests.parse.helpers import make_page
from webtrawl.extract.chunks import chunk_markdown

_FILLER = "This sentence is here so that the extractor sees a real article with enough running text in it. "


def _article(body: str) -> bytes:
    return (
        f"<html><head><title>T</title></head><body><article><h1>The article</h1><p>{_FILLER * 3}</p>"
        f"{body}<p>{_FILLER * 2}</p></article></body></html>"
    ).encode()


def _images(markdown: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", markdown)


@needs_corpus
def test_lazy_images_of_corpus_pages_have_their_real_urls_not_the_placeholder() -> None:
    apple = run(corpus_page("appleinsider.com"), markdown=True, extract_timeout=TEXT_TIMEOUT).record.markdown
    snopes = run(corpus_page("snopes.com"), markdown=True, extract_timeout=TEXT_TIMEOUT).record.markdown
    assert isinstance(apple, str) and isinstance(snopes, str)
    # appleinsider: src is a 1x1 white pixel, the photo in data-original; snopes: a spinner, the photo in data-lazy-src
    assert "1x1-white" not in apple and "lazyload-placeholder" not in snopes
    assert "![Apple's 16-inch MacBook Pro](https://photos5.appleinsider.com/gallery/33622-59478-Logic-Pro-X" in apple
    assert len(set(_images(apple))) >= 12
    assert "https://www.snopes.com/tachyon/2019/11/yovanovitch-rumor.jpg?resize=647,855" in _images(snopes)


def test_an_image_with_only_a_srcset_gets_its_widest_candidate(tmp_path: Path) -> None:
    srcset = "/s/a.jpg?resize=80,80 80w,/s/a.jpg?resize=1200,630 1200w, /s/a.jpg?resize=375,211 375w"
    page = _article(
        f'<p><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" srcset="{srcset}" alt="A"> First. {_FILLER}</p>'
        f'<p><img data-srcset="/s/b-small.png 1x, /s/b-big.png 2x" src="/s/grey.gif" alt="B"> Second. {_FILLER}</p>'
        f'<p><img src="/s/c.jpg" srcset="/s/c-400.jpg 400w, /s/c-800.jpg 800w" alt="C"> Third. {_FILLER}</p>'
    )  # each paragraph its own text: trafilatura drops a repeated one
    images = _images(str(run(make_page(page, url="https://x.example/n/1"), markdown=True).record.markdown))
    assert images == [
        "https://x.example/s/a.jpg?resize=1200,630",
        "https://x.example/s/b-big.png",
        "https://x.example/s/c.jpg",  # a real src is what the browser shows first: kept
    ]
    # with XPath rules the tree is lxml's, shared with them: the same Markdown, and the rules see the page as served
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nurl = "."\n[rule.fields]\nsrcs = { xpath = "//img[1]/@src", all = true }\n')
    done = run(make_page(page, url="https://x.example/n/1"), markdown=True, extract=str(rules))
    assert _images(str(done.record.markdown)) == images
    assert done.items and done.items[0]["srcs"][1] == "/s/grey.gif"


@needs_corpus
def test_text_after_an_empty_link_is_not_made_the_links_text() -> None:
    # ascom.com's footnotes: <a name="_ftn1"></a>[1] Alarm fatigue: ...
    md = run(corpus_page("ascom.com"), markdown=True, extract_timeout=TEXT_TIMEOUT).record.markdown
    assert isinstance(md, str)
    assert re.search(r"^\\\[1\\\] Alarm fatigue: impacts on patient safety", md, re.M), md
    page = _article(f'<p>See <a href="/icons/x"><i class="icon"></i></a>the results below. {_FILLER}</p>')
    md = str(run(make_page(page, url="https://x.example/n/2"), markdown=True).record.markdown)
    assert "See the results below." in md and "](https://x.example/icons/x)" not in md


CODE = "def first():\n    return 1\n\n\ndef second():\n    x = 2\n\n    return x"


def test_code_blocks_keep_their_blank_lines_in_markdown_and_in_chunks() -> None:
    page = _article(f"<pre><code>{CODE}</code></pre><p>{_FILLER}</p>")
    md = str(run(make_page(page, url="https://x.example/n/3"), markdown=True).record.markdown)
    assert f"```\n{CODE}\n```" in md
    chunks = [c.text for c in chunk_markdown("https://x.example/n/3", md, 50)]
    code = [c for c in chunks if c.startswith("```")]
    # cut between the two functions, each piece fenced, the blank line inside the second kept
    first, second = "```\ndef first():\n    return 1\n```", "```\ndef second():\n    x = 2\n\n    return x\n```"
    assert code == [first, second], chunks


@needs_corpus
def test_a_table_footer_repeating_the_header_is_not_a_second_header_row() -> None:
    # dawgsbynature's snap-count tables: <thead> and then a <tfoot> with the same Pos/Player/... row, before <tbody>
    page = corpus_page("dawgsbynature.com")
    both = run(page, markdown=True, text=True, extract_timeout=TEXT_TIMEOUT).record
    alone = run(page, text=True, extract_timeout=TEXT_TIMEOUT).record.text
    header = "| Pos | Player | Plays | % | Stats |"
    assert isinstance(both.markdown, str) and isinstance(both.text, str) and isinstance(alone, str)
    assert both.markdown.count(header) == 4
    assert f"{header}\n|---|---|---|---|---|\n| DL | Larry Ogunjobi" in both.markdown
    assert both.text.count("Pos | Player") == 4 and alone.count("Pos") == 4, alone


def test_a_table_footer_with_its_own_row_comes_after_the_body() -> None:
    table = (
        "<table><thead><tr><th>Item</th><th>Price</th></tr></thead><tfoot><tr><td>Total</td><td>3</td></tr></tfoot>"
        "<tbody><tr><td>Apple</td><td>1</td></tr><tr><td>Pear</td><td>2</td></tr></tbody></table>"
    )
    md = str(run(make_page(_article(table), url="https://x.example/n/4"), markdown=True).record.markdown)
    assert "| Apple | 1 |\n| Pear | 2 |\n| Total | 3 |" in md, md


@needs_corpus
def test_a_line_break_inside_a_paragraph_is_a_hard_break_not_a_new_paragraph() -> None:
    # kabarislamia.com: "... keinginan orang yang kamu<br> benci celaka atau binasanya." inside one <p>
    md = run(corpus_page("kabarislamia.com"), markdown=True, extract_timeout=TEXT_TIMEOUT).record.markdown
    assert isinstance(md, str)
    assert "keinginan orang yang kamu\\\nbenci celaka atau binasanya." in md
    tokens = MarkdownIt("commonmark").parse(md)
    paragraph = next(t for t in tokens if t.type == "inline" and "benci celaka" in t.content)
    assert "Jika engkau mencintai seseorang" in paragraph.content  # one paragraph, so one chunk's block
    assert any(child.type == "hardbreak" for child in paragraph.children or [])


def test_breaks_in_a_row_are_one_paragraph_break_whatever_the_whitespace_between() -> None:
    def markdown(breaks: str) -> str:
        page = _article(f"<p>A first line of this poem, long enough.{breaks}A second line of it, as long.</p>")
        return str(run(make_page(page, url="https://x.example/n/5"), markdown=True).record.markdown)

    assert "long enough.\n\nA second line" in markdown("<br><br>")
    assert markdown("<br><br>") == markdown("<br>\n  <br>\n") == markdown("<br/> <br/><br/>")


def test_preformatted_text_is_a_code_block_with_its_lines_and_markup_inside_stays_inside() -> None:
    session = "$ ls -l\ntotal 0\n\n$ echo done"
    page = _article(
        f"<pre>{session}</pre><p>Then the second listing, with some words around it. {_FILLER}</p>"
        "<pre><code>x = 1\n<b>y</b> = 2<br>z = 3</code></pre>"
    )
    md = str(run(make_page(page, url="https://x.example/n/6"), markdown=True).record.markdown)
    assert f"```\n{session}\n```" in md, md
    assert "```\nx = 1\ny = 2\nz = 3\n```" in md, md


@needs_corpus
def test_a_heading_inside_a_list_item_is_bold_text_not_hashes_mid_line() -> None:
    # cbssports.com's related stories: <li>...<a>Gronk, Serena perform with Laker Girls</a><h4>Gronk may have ...</h4>
    md = run(corpus_page("cbssports.com/nfl/"), markdown=True, extract_timeout=TEXT_TIMEOUT).record.markdown
    assert isinstance(md, str)
    assert not re.search(r"\S #{1,6} ", md), md  # hashes mid-line are literal text to a Markdown reader
    assert "[Gronk, Serena perform with Laker Girls](" in md and ") **Gronk may have found his true calling**" in md
    page = _article("<ul><li><h4>Heading first in item</h4> then text after it</li><li>One</li></ul>")
    md = str(run(make_page(page, url="https://x.example/n/7"), markdown=True).record.markdown)
    assert "- **Heading first in item** then text after it\n- One" in md, md


@needs_corpus
def test_loose_text_laid_out_with_breaks_keeps_its_sentences_whole_around_links() -> None:
    # appleinsider: a <span> holding the article, its paragraphs text and links between <br><br>
    md = run(corpus_page("appleinsider.com"), markdown=True, text=True, extract_timeout=TEXT_TIMEOUT).record
    assert isinstance(md.markdown, str) and isinstance(md.text, str)
    link = "[MacBook Pro](https://appleinsider.com/topic/macbook+pro)"
    assert f"\nJust months after the last i9 {link} was released, Apple has unveiled" in md.markdown
    assert "Just months after the last i9 MacBook Pro was released, Apple" in md.text
    assert "You *can* get there from here" in md.markdown
    # macrumors: the same in a <div>
    md = run(corpus_page("macrumors.com/2019/11/18"), markdown=True, extract_timeout=TEXT_TIMEOUT).record
    link = "*[DigiTimes](https://www.digitimes.com/)*"
    assert f"cited by hit-or-miss Taiwanese publication {link}. A preview of the report" in str(md.markdown)


@needs_corpus
def test_a_table_laid_out_as_a_page_is_paragraphs_not_a_pipe_table_holding_the_article() -> None:
    # thespacereview.com: the article is one cell of a layout table (its paragraphs, headings and pull quotes)
    page = corpus_page("thespacereview.com")
    md = run(page, markdown=True, extract_timeout=TEXT_TIMEOUT).record.markdown
    assert isinstance(md, str)
    assert re.search(r"^Earlier this month, NASA announced the newest milestone", md, re.M), md[:500]
    assert re.search(r"^Recently, though, NASA is getting criticism from the opposite direction", md, re.M)
    for chunk in chunk_markdown("https://www.thespacereview.com/article/3834/1", md, 1000):
        lines = chunk.text.split("\n")  # a chunk that starts with a table row starts with its header
        assert not lines[0].startswith("|") or (len(lines) > 1 and lines[1].startswith("|---")), chunk.text[:300]


def test_an_empty_pre_is_no_empty_code_block() -> None:
    page = _article(f"<pre><br> </pre><p>Words after it. {_FILLER}</p>")
    assert "```" not in str(run(make_page(page, url="https://x.example/n/8"), markdown=True).record.markdown)


@needs_corpus
def test_a_line_break_in_a_heading_keeps_the_heading_whole() -> None:
    # digg.com: <h4><br><strong>What Does Stadia Offer?</strong></h4>, an empty heading and a bold paragraph
    md = run(corpus_page("digg.com/2019/is-stadia"), markdown=True, extract_timeout=TEXT_TIMEOUT).record.markdown
    assert isinstance(md, str) and "\n#### **What Does Stadia Offer?**\n" in md and not re.search(r"^#+ *$", md, re.M)
    paths = [c.heading_path for c in chunk_markdown("u", md, 1000)]
    assert any(path[-1:] == ("What Does Stadia Offer?",) for path in paths), paths
    page = _article(f"<h2><span>Prices and<br> delivery</span></h2><p>Both change in spring. {_FILLER}</p>")
    md = str(run(make_page(page, url="https://x.example/n/9"), markdown=True).record.markdown)
    assert "\n## Prices and delivery\n\nBoth change in spring." in md, md
    assert ("The article", "Prices and delivery") in [c.heading_path for c in chunk_markdown("u", md, 500)]


def test_an_image_that_is_a_link_stays_a_link_and_a_link_s_text_beside_an_image_keeps_its_link() -> None:
    page = _article(
        f'<p>{_FILLER}</p><figure><a href="/photos/cat-full.jpg"><img src="/photos/cat.jpg" alt="A cat"></a>'
        f"<figcaption>The cat.</figcaption></figure><p>Another paragraph of its own. {_FILLER}</p>"
        '<p><a href="../story/2"><picture><img data-src="/i/dog.jpg" src="/grey.gif" alt="A dog"></picture></a></p>'
        f"<p>A third paragraph of its own. {_FILLER}</p>"
        '<p><a href="/story/3"><img src="/i/bird.png" alt="A bird"> The bird story</a></p>'
        '<div>A loose line.<br><br><a href="/story/4"><img src="/i/fish.jpg" alt="A fish"></a>The fish swam away.</div>'
    )
    md = str(run(make_page(page, url="https://x.example/n/1"), markdown=True).record.markdown)
    assert "[![A cat](https://x.example/photos/cat.jpg)](https://x.example/photos/cat-full.jpg)" in md, md
    assert "[![A dog](https://x.example/i/dog.jpg)](https://x.example/story/2)" in md, md
    # the image in source order, then the link with its text, in one paragraph
    assert "\n![A bird](https://x.example/i/bird.png) [The bird story](https://x.example/story/3)\n" in md, md
    inline = [t for t in MarkdownIt("commonmark").parse(md) if t.type == "inline"]
    linked = [
        c.attrs["src"]
        for t in inline
        for a, c in zip(t.children or [], (t.children or [])[1:], strict=False)
        if a.type == "link_open" and c.type == "image"
    ]
    assert linked == [
        "https://x.example/photos/cat.jpg",
        "https://x.example/i/dog.jpg",
        "https://x.example/i/fish.jpg",
    ]
    # the text after an image-only link is not the link's text
    assert "[![A fish](https://x.example/i/fish.jpg)](https://x.example/story/4) The fish swam away." in md, md


def test_no_line_of_a_chunk_ends_in_whitespace_and_a_line_break_is_still_one() -> None:
    page = _article(
        "<table><tr><th>Item</th><th>Price</th></tr><tr><td>Apple</td><td>1</td></tr></table>"
        f'<p>{_FILLER}</p><p><img src="/i/a.jpg" alt="An apple">\n</p>'
        f"<p><br>The shop's address: <b>1 Main Street</b><br>\n  Springfield <br> </p><p>{_FILLER}</p>"
    )
    md = str(run(make_page(page, url="https://x.example/n/7"), markdown=True).record.markdown)
    lines = [line for chunk in chunk_markdown("https://x.example/n/7", md, 2000) for line in chunk.text.split("\n")]
    assert [line for line in lines if line != line.rstrip()] == [], md
    assert "| Apple | 1 |" in lines and "![An apple](https://x.example/i/a.jpg)" in lines, md
    address = next(t for t in MarkdownIt("commonmark").parse(md) if t.type == "inline" and "address" in t.content)
    kinds = [child.type for child in address.children or []]
    assert kinds.count("hardbreak") == 1 and kinds.count("softbreak") == 0, kinds  # none at its start or end
    assert "\\" not in "".join(c.content for c in address.children or [] if c.type == "text"), md


def test_words_around_bold_text_or_a_caption_s_spans_outside_paragraphs_are_not_glued() -> None:
    page = _article(
        f"<div><h2>The deal</h2>Loose text of a deal everyone <strong>will</strong> appreciate, though. {_FILLER}</div>"
        f"<div><h2>The note</h2><strong>Note: </strong>The bundle includes the rest. {_FILLER}</div>"
        '<figure><img src="/i/a.jpg" alt="A"><figcaption><em>The final frontier!</em> '
        "<span>(Image credit: All About Space)</span></figcaption></figure>"
        f"<div><i>Handbook of Habitats</i> (2018), a book. {_FILLER}</div>"
    )
    done = run(make_page(page, url="https://x.example/n/8"), markdown=True, text=True).record
    md, text = str(done.markdown), str(done.text)
    alone = str(run(make_page(page, url="https://x.example/n/8"), text=True).record.text)  # --text without Markdown
    for words in ("will appreciate", "Note: The bundle", "Habitats (2018)"):
        assert words in text and words in alone, (text, alone)
    assert "frontier! (Image credit" in text, text  # a caption is in the text of --markdown only
    assert "**will** appreciate" in md and "**Note:** The bundle" in md, md
    assert "*The final frontier!* (Image credit" in md and "*Handbook of Habitats* (2018)" in md, md
    assert "\u2e3f" not in md + text + alone


def test_a_caption_written_twice_cut_and_whole_is_read_once() -> None:
    # Hearst's newspapers (ctpost, sfgate, chron...): a script shows the cut caption or the whole one, never both
    caption = "Karma's designers unveil the Vision SC2 concept at the Los Angeles Auto Show on Tuesday, Nov. 19, 2019."
    page = _article(
        f'<ul class="gallery"><li><div class="img-wrap"><img src="/p/1.jpg" alt="Karma"></div><div class="caption">'
        f'<div class="caption-full">{caption}<a class="more-caption"> less</a></div>\n'
        f'<div class="caption-truncated">{caption[:40]}<a class="more-caption"> ...more</a></div>\n'
        '<span class="credit">Photo: Damian Dovarganes, AP</span></div></li></ul>'
    )
    done = run(make_page(page, url="https://x.example/n/9"), markdown=True, text=True).record
    for out in (str(done.markdown), str(done.text)):
        assert out.count(caption[:40]) == 1, out
        assert "less" not in out and "more" not in out, out  # the toggles
        assert f"{caption} Photo: Damian Dovarganes, AP" in out, out  # not glued to the credit after it


@needs_corpus
def test_a_hearst_newspaper_caption_is_read_once_and_apart_from_its_credit() -> None:
    md = run(corpus_page("Deval-Patrick"), markdown=True, extract_timeout=TEXT_TIMEOUT).record.markdown
    assert isinstance(md, str)
    # the image's alt text has it once; the caption under the photo once more (it was twice, and glued to itself)
    assert md.count("speaks with a business owner during a campaign stop") == 2, md[:2000]
    assert "in Columbia, S.C. Photo: Meg Kinnard, AP" in md, md[:2000]
