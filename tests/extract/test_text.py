"""``--text`` on the corpus's article pages, and ``--scrub-pii`` on text."""

from __future__ import annotations

import subprocess
import sys

import msgspec
import pytest

from tests.extract.corpus import CORPUS, TEXT_TIMEOUT, corpus_page, corpus_rows, needs_corpus
from tests.extract.helpers import extract_ctx, run
from tests.parse.helpers import make_page
from webtrawl.extract.pii import scrub_text
from webtrawl.parse import process_page


@needs_corpus
def test_text_gives_main_text_for_every_corpus_article() -> None:
    ctx = extract_ctx(text=True, extract_timeout=TEXT_TIMEOUT)
    short = []
    for page_id, url in corpus_rows():
        gz = (CORPUS / "pages" / f"{page_id}.html.gz").read_bytes()
        out = process_page(make_page(gz, url=url, headers=[("Content-Encoding", "gzip")]), ctx)
        rec = out.record
        assert rec.error is None, (url, rec.error_detail)
        assert isinstance(rec.text, str) and isinstance(rec.text_title, str) and isinstance(rec.language, str)
        if len(rec.text) < 200:
            short.append(url)
        assert out.items == [] and rec.items is msgspec.UNSET  # --text alone extracts no items
    assert short == []


def test_text_fields_appear_only_with_text() -> None:
    html = b"<html lang='de'><title>T</title><body><article><p>" + b"Ein Satz. " * 80 + b"</p></article></body></html>"
    plain = msgspec.to_builtins(run(make_page(html)).record)
    assert "text" not in plain and "language" not in plain
    rec = run(make_page(html), text=True).record
    assert "Ein Satz." in str(rec.text) and rec.language == "de"
    assert {"text", "text_title", "author", "date", "language"} <= set(msgspec.to_builtins(rec))


def test_text_is_cut_at_the_size_cap() -> None:
    html = b"<html><body><article>" + b"<p>" + b"word " * 20_000 + b"</p></article></body></html>"
    rec = run(make_page(html), text=True, text_max_bytes=5_000).record
    assert rec.error is None and 0 < len(str(rec.text)) <= 5_000


def test_scrubbed_text() -> None:
    html = (
        b"<html><body><article><p>"
        + b"Write to jane.doe@example.com or call (555) 123-4567 before 2019-11-19. " * 10
        + b"</p></article></body></html>"
    )
    text = str(run(make_page(html), text=True, scrub_pii=True).record.text)
    assert "[email]" in text and "[phone]" in text and "example.com" not in text and "2019-11-19" in text


@pytest.mark.parametrize(
    ("given", "masked"),
    [
        ("mail bob.smith+news@mail.example.co.uk now", "mail [email] now"),
        ("call +44 20 7946 0958.", "call [phone]."),
        ("call 030/1234567 or 0049 30 1234567", "call [phone] or [phone]"),
        ("(555) 123-4567", "[phone]"),
        ("on 2019-11-19 and 19.11.2019", "on 2019-11-19 and 19.11.2019"),
        ("price 1,299 for 3 items, order 12345", "price 1,299 for 3 items, order 12345"),
    ],
)
def test_scrub_masks_emails_and_phone_numbers_only(given: str, masked: str) -> None:
    assert scrub_text(given) == masked


@needs_corpus
def test_language_is_one_tag_per_language_however_the_page_writes_it() -> None:
    # gizmodo writes <html lang="en-us">, jaraguadosul.com.br lang="pt_BR"; others en-US and pt-BR
    assert run(corpus_page("gizmodo.com"), text=True, extract_timeout=TEXT_TIMEOUT).record.language == "en-US"
    assert run(corpus_page("jaraguadosul.com.br"), text=True, extract_timeout=TEXT_TIMEOUT).record.language == "pt-BR"
    html = b"<html lang='ZH-hant-tw'><title>T</title><article><p>" + b"A sentence. " * 80 + b"</p></article>"
    assert run(make_page(html), text=True).record.language == "zh-Hant-TW"


@needs_corpus
def test_a_page_that_declares_no_language_gets_the_one_its_text_is_in() -> None:
    # neither declares one (no lang attribute, no meta): a corpus filtered by language lost them
    assert run(corpus_page("cnn.com"), text=True, extract_timeout=TEXT_TIMEOUT).record.language == "en"
    assert run(corpus_page("autoracing.com.br"), text=True, extract_timeout=TEXT_TIMEOUT).record.language == "pt"
    short = b"<html><title>T</title><article><p>Home. News. Sport.</p></article>"
    assert run(make_page(short), text=True).record.language == ""  # too little text to tell


def test_text_exclude_leaves_an_ad_and_a_date_out_of_the_main_text_and_its_markdown() -> None:
    """An ad and a "Last updated" line inside <article> are main text to trafilatura: a watched page was 'changed'
    on every visit. --text-exclude takes them out (the text around them stays, in order)."""
    article = (
        "<p>First paragraph of the story, long enough to be the main text of this page and not navigation.</p>"
        "<p class='updated'>Last updated: {when}</p><div class='ad'>Buy cheap stuff now, offer {when}</div>"
        "<p>Second paragraph <span class='ad'>sponsored {when}</span>of the story goes on for a while here.</p>"
    )

    def page(when: str) -> bytes:
        body = (article.format(when=when) + "<p>More of the story. </p>" * 10).encode()
        return b"<html><body><nav>menu</nav><article>" + body + b"</article></body></html>"

    slow = {"text": True, "extract_timeout": TEXT_TIMEOUT}  # trafilatura's first page in this process is slow
    for markdown in (False, True):
        texts = [run(make_page(page(w)), **slow, markdown=markdown).record for w in ("10:00", "11:00")]
        assert "Last updated: 10:00" in str(texts[0].text) and texts[0].text != texts[1].text  # as it was
        options = {**slow, "markdown": markdown, "text_exclude": (".updated", "div.ad, span.ad")}
        kept = [run(make_page(page(w)), **options).record for w in ("10:00", "11:00")]
        assert kept[0].text == kept[1].text and kept[0].markdown == kept[1].markdown
        assert "Last updated" not in str(kept[0].text) and "sponsored" not in str(kept[0].text)
        assert "Second paragraph of the story" in str(kept[0].text)


def test_no_line_of_the_text_ends_in_whitespace() -> None:
    # trafilatura kept the space before an image it leaves out of the text ("...the first car based on it <img>"):
    # one line in sixteen of the corpus's text ended in whitespace with --markdown, one in thirty-five without
    page = (
        b"<html><body><article><h1>Cars</h1><p>The first car based on the platform is not expected until next year, "
        b'but the automaker showed a new concept today. <img src="/car.jpg" alt="The car"></p>'
        b"<p>Its range is said to be about 300 miles on one charge, and it comes out in two years' time.</p>"
        b"</article></body></html>"
    )
    for markdown in (False, True):
        text = run(make_page(page, url="https://cars.example/a"), text=True, markdown=markdown).record.text
        assert isinstance(text, str) and "showed a new concept today.\nIts range" in text, text


def test_no_line_of_the_text_starts_with_a_space_but_a_line_of_code() -> None:
    # trafilatura kept the space after an image it leaves out of the text: " The cat sat." (25 corpus pages)
    article = (
        '<html><body><article><h1>Cats</h1><p><img src="/cat.jpg" alt="A cat"> The cat sat on the mat all day long, '
        "and nobody could tell why it would not move from there.</p><p>It was a warm and sunny day in the garden, "
        "and the cat liked the sun on its back.</p>{}</article></body></html>"
    )
    for markdown in (False, True):
        page = make_page(article.format("").encode(), url="https://cats.example/a")
        text = str(run(page, text=True, markdown=markdown).record.text)
        assert "\nThe cat sat on the mat" in text and "\n " not in text, text
    code = "<pre><code>def sit(cat):\n    return cat.mat\n</code></pre>"
    page = make_page(article.format(code).encode(), url="https://cats.example/b")
    for markdown in (False, True):
        assert "\n    return cat.mat" in str(run(page, text=True, markdown=markdown).record.text)


@needs_corpus
def test_no_line_of_a_corpus_pages_text_ends_in_whitespace() -> None:
    ctx = extract_ctx(text=True, markdown=True, extract_timeout=TEXT_TIMEOUT)
    for page_id, url in corpus_rows()[:40]:
        gz = (CORPUS / "pages" / f"{page_id}.html.gz").read_bytes()
        text = str(process_page(make_page(gz, url=url, headers=[("Content-Encoding", "gzip")]), ctx).record.text)
        assert all(line == line.rstrip() for line in text.split("\n")), url


_FIRST_PAGE = """
import signal
import sys

import py3langid.langid as langid

from tests.extract.helpers import run
from tests.parse.helpers import make_page

real = langid.LanguageIdentifier.__init__  # the model is built once loaded, in every py3langid version we admit
armed = []


def load(self, *args, **kwargs):
    armed.append(signal.getitimer(signal.ITIMER_REAL)[0] > 0)  # a page's --extract-timeout is running
    real(self, *args, **kwargs)


langid.LanguageIdentifier.__init__ = load
text = "A page in plain English with enough running text for its language to be told. " * 5
for _ in range(2):
    record = run(make_page(f"<html><body><article><p>{text}</p></article></body></html>".encode()), text=True).record
    assert record.language == "en", record
print(armed)
"""


def test_the_language_model_loads_before_the_first_page_time_limit_starts() -> None:
    """py3langid's model (a second or more, several under load) was loaded inside the first page's
    --extract-timeout: on a busy machine that page ran past it, the load was interrupted, and every later page paid
    it again and failed too (CI under load: every page's main text timed out). A fresh interpreter: the model is
    loaded once, and not on a page's time."""
    done = subprocess.run([sys.executable, "-c", _FIRST_PAGE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[False]"]


_FIRST_SHORT_HOST = """
import signal

import tld.utils

from tests.extract.helpers import run
from tests.parse.helpers import make_page

real = tld.utils.get_tld_names
armed = []


def load(*args, **kwargs):
    if not tld.utils.tld_names:  # the list is read now
        armed.append(signal.getitimer(signal.ITIMER_REAL)[0] > 0)  # a page's --extract-timeout is running
    return real(*args, **kwargs)


tld.utils.get_tld_names = load
text = "A page in plain English with enough running text for its language to be told. " * 5
for _ in range(2):
    page = make_page(f"<html><body><article><p>{text}</p></article></body></html>".encode(), url="http://bbc.co.uk/")
    assert run(page, text=True).record.error is None
print(armed)
"""


def test_the_domain_list_loads_before_the_first_page_time_limit_starts() -> None:
    """The list of top-level domains trafilatura reads for a page's host (a short name, like bbc.co.uk) was the other
    first-use load inside the first page's --extract-timeout (4 of 21 s at a load of 28): read once, not on a page's
    time."""
    done = subprocess.run([sys.executable, "-c", _FIRST_SHORT_HOST], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["[False]"]
