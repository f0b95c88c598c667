"""``--markdown`` keeps a paragraph whole around what trafilatura breaks it at or drops: an image among its words
(extract/text.py), an image framed in an ``<output>`` (IGN), and the space before an emphasis's link
(extract/textprep.py)."""

from __future__ import annotations

import pytest

from tests.extract.corpus import TEXT_TIMEOUT, corpus_page, needs_corpus
from tests.extract.helpers import markdown_and_text, run
from tests.parse.helpers import make_page

_FILLER = "This sentence is here so that the extractor sees a real article with enough running text in it. "


def _markdown(body: str) -> str:
    html = (
        f"<html><body><article><h1>The story</h1><p>{_FILLER * 2}</p>{body}<p>{_FILLER * 2}</p></article></body></html>"
    )
    rec = run(make_page(html.encode(), url="https://news.example/a/"), markdown=True).record
    assert isinstance(rec.markdown, str)
    return rec.markdown


def test_an_image_among_a_paragraphs_words_stays_in_its_line() -> None:
    md = _markdown(
        '<p>The governor, <img src="g.jpg" alt="Her portrait"><a href="/people/g">Kristi Noem</a>, spoke.</p>'
        '<p>Both <b>bold</b><img src="b.jpg" alt="B"> and a linked <a href="/big.jpg"><img src="s.jpg" alt="S"></a>'
        " photo.</p>"
        '<p><img src="alone.jpg" alt="Alone"></p>'
    )
    assert (
        "The governor, ![Her portrait](https://news.example/a/g.jpg) [Kristi Noem](https://news.example/people/g),"
        " spoke." in md
    )
    assert (
        "Both **bold** ![B](https://news.example/a/b.jpg) and a linked"
        " [![S](https://news.example/a/s.jpg)](https://news.example/big.jpg) photo." in md
    )
    assert "\n\n![Alone](https://news.example/a/alone.jpg)\n\n" in md  # alone in its paragraph: a block still


def test_an_image_framed_in_an_output_is_kept() -> None:
    md = _markdown(
        '<p>Deals.</p><a href="https://shop.example/u"><output class="article-image-container"><img src="pad.jpg">'
        "</output></a>The price of the controller dropped.<div><output>$1000</output></div>"
    )
    assert "[![](https://news.example/a/pad.jpg)](https://shop.example/u)" in md
    assert "$1000" not in md  # a form's output, no image in it, is left out as before


def test_the_space_before_an_emphasiss_link_is_kept() -> None:
    md = _markdown('<section><em>Follow us at Twitter <a href="https://twitter.com/deals">@deals</a>.</em></section>')
    assert "*Follow us at Twitter [@deals](https://twitter.com/deals).*" in md


@needs_corpus
def test_igns_deals_keep_their_images_and_words() -> None:
    markdown, text = markdown_and_text(corpus_page("ign.com/articles"), extract_timeout=TEXT_TIMEOUT)
    assert "Follow us at Twitter [@igndeals](https://twitter.com/IGNDeals?lang=en)." in markdown
    assert "Follow us at Twitter @igndeals." in text
    assert (
        "[![](https://oyster.ignimgs.com/wordpress/stg.ign.com/2019/11/ps4dualshockcrystal.jpg?width=640&fit=bounds"
        "&height=480&quality=20&dpr=0.05)](https://r.zdbb.net/u/bdum) The price of one of the PS4" in markdown
    )


@pytest.mark.parametrize("tag", ["section", "div"])
def test_a_sections_loose_text_beside_a_heading_is_kept(tag: str) -> None:
    intro = "Loose words that open the piece, long enough to be a paragraph of their own, as a browser shows them."
    md = _markdown(f"<{tag}>{intro} <h2>Deals</h2><p>The first deal of the day, and a good one.</p></{tag}>")
    assert f"\n\n{intro}\n\n## Deals\n\nThe first deal of the day" in md, md


@needs_corpus
def test_igns_introduction_is_kept() -> None:
    md = run(corpus_page("ign.com/articles"), markdown=True, extract_timeout=TEXT_TIMEOUT).record.markdown
    assert isinstance(md, str) and "\n\nWe bring you the best deals we've found today on video games" in md
    assert "you can sign up for a [free 7-day trial](https://r.zdbb.net/u/bcnx). Afterwards" in md


def test_an_images_caption_is_kept_with_its_credit_apart_and_a_screen_readers_label_left_out() -> None:
    """trafilatura dropped a figcaption of loose text (what the image shows, whose it is); a caption's credit the
    page wrote glued to it ("treatment</span><span>Credit: EPA", set apart by the site's CSS) came out glued; the
    BBC's "Image caption" label, for screen readers only, led every caption."""
    md = _markdown(
        '<figure><img src="/img/river.jpg" alt="The river"><figcaption><span class="off-screen">Image caption'
        "</span><span>The river at dawn, seen from the old bridge</span><span class=credit>Credit: EPA</span>"
        "</figcaption></figure>"
    )
    assert "\n\n![The river](https://news.example/img/river.jpg)\n\n" in md
    assert "\n\nThe river at dawn, seen from the old bridge Credit: EPA\n\n" in md
    assert "Image caption" not in md


def test_an_image_in_a_heading_has_an_absolute_url() -> None:
    md = _markdown('<h2>Update <img src="icons/wave.png" alt="wave"></h2><p>The water rose again this morning.</p>')
    assert "## Update ![wave](https://news.example/a/icons/wave.png)" in md
