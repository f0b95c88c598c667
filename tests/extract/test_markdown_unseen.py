"""``--markdown`` and ``--text`` leave out what the page hides: elements hidden by their own markup, and hover popups
inside a sentence (extract/unseen.py); but not a page hidden as a whole until its scripts run."""

from __future__ import annotations

from tests.extract.corpus import TEXT_TIMEOUT, corpus_page, needs_corpus
from tests.extract.helpers import markdown_and_text
from tests.parse.helpers import make_page

_FILLER = "This sentence is here so that the extractor sees a real article with enough running text in it. "


def _page(body: str, wrapper: str = "article") -> bytes:
    tag = wrapper.split()[0]
    return (
        f"<html><head><title>T</title></head><body><{wrapper}><h1>The story</h1><p>{_FILLER * 2}</p>{body}"
        f"<p>{_FILLER * 2}</p></{tag}></body></html>"
    ).encode()


def _both(html: bytes) -> tuple[str, str]:
    return markdown_and_text(make_page(html, url="https://news.example/a"))


def test_a_hover_popup_inside_a_sentence_is_left_out() -> None:
    # The Hill's shape: a politician's name, and after it a card (photo, full name, headlines) its CSS shows on hover
    card = (
        '<span class="rollover-people-block"><span class="rollover-block"><span><img src="/k.jpg" alt="">'
        '<a class="name" href="/people/kn">Kristi Lynn Noem</a><a href="/news/1">Governor doubles down</a> '
        '<a href="/news/2">Pipeline laws dropped</a> <a class="more" href="/people/kn">MORE</a></span></span></span>'
    )
    tip = '<span class="has-tooltip">term<span class="tooltiptext">A definition shown on hover.</span></span>'
    body = (
        f'<p>South Dakota Gov. <span class="rollover-people"><a href="/people/kn">Kristi Noem</a>{card}</span>'
        f" (R) is defending the campaign, a {tip} of its own.</p>"
    )
    markdown, text = _both(_page(body))
    assert "South Dakota Gov. [Kristi Noem](https://news.example/people/kn) (R) is defending the campaign" in markdown
    assert "South Dakota Gov. Kristi Noem (R) is defending the campaign, a term of its own." in text
    for hidden in ("Kristi Lynn", "Governor doubles", "MORE", "k.jpg", "definition"):
        assert hidden not in markdown and hidden not in text


def test_elements_hidden_by_their_markup_are_left_out() -> None:
    # Business Insider's shape: a schema.org copy of the article (title, dates, logo, text) hidden for crawlers
    copy = (
        '<div style="Display: None;" itemscope itemtype="http://schema.org/NewsArticle"><h1 itemprop="name">The story'
        '</h1><span itemprop="datePublished">2019-11-19T08:57:40+01:00</span><span itemprop="publisher">NewsCo</span>'
        f'<div itemprop="articleBody">{_FILLER * 3}</div></div>'
    )
    body = (
        f"{copy}<p hidden>A hidden paragraph.</p>"
        "<p>Shown words. <span aria-hidden='true'>An aria-hidden note.</span></p>"
        '<div style="color: red; visibility:hidden !important">A hidden notice.</div>'
    )
    markdown, text = _both(_page(body))
    for hidden in ("2019-11-19", "NewsCo", "hidden paragraph", "aria-hidden note", "hidden notice"):
        assert hidden not in markdown and hidden not in text
    assert "Shown words." in markdown and markdown.count(_FILLER.strip()) == 4


def test_a_page_hidden_whole_until_its_scripts_run_keeps_its_text() -> None:
    markdown, text = _both(_page("<p>The middle paragraph.</p>", wrapper='div id="app" style="display:none"'))
    assert "The middle paragraph." in markdown and "The middle paragraph." in text


@needs_corpus
def test_the_hills_politician_cards_are_not_in_its_sentences() -> None:
    markdown, text = markdown_and_text(corpus_page("thehill.com/blogs"), extract_timeout=TEXT_TIMEOUT)
    assert "Rep. [Ilhan Omar](https://thehill.com/people/ilhan-omar) (D-Minn.), the U.S. Attorney" in markdown
    assert "Rep. Alexandria Ocasio-Cortez (D-N.Y.) shortly after the arrest linked" in text
    assert "Hillicon Valley" not in markdown and "thumb_100" not in markdown


@needs_corpus
def test_business_insiders_hidden_schema_copy_is_not_in_its_text() -> None:
    markdown, text = markdown_and_text(corpus_page("businessinsider.com/10-things"), extract_timeout=TEXT_TIMEOUT)
    assert "Google has bought CloudSimple" in markdown
    assert markdown.count("CloudSimple was originally launched") == 1 and text.count("Masayoshi Son told") == 1
    assert (
        "2019-11-19T08:57" not in markdown and "og-image-logo.png" not in markdown and "BusinessInsiderDe" not in text
    )
