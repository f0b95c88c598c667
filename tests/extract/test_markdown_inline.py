"""``--markdown`` keeps a paragraph whole around an image among its words (extract/text.py)."""

from __future__ import annotations

from tests.extract.helpers import run
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
