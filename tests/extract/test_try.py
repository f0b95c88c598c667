"""``trawl try`` as a user runs it: one JSON line per saved page, WARC response or URL; broken rules or callbacks
stop it at once with one ``trawl: error:`` line naming the file and line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.extract.corpus import RULES, SPIDERS, corpus_file, needs_corpus
from tests.parse.helpers import make_page
from webtrawl.store import WarcWriter
from webtrawl_testweb import TestWeb


def _trawl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webtrawl", "try", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def _lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, object]]:
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@needs_corpus
def test_try_prints_items_of_saved_pages() -> None:
    path, url = corpus_file("slashgear.com")
    (line,) = _lines(_trawl("--extract", str(RULES), "--url", url, str(path)))
    assert line["input"] == str(path) and line["url"] == url and line["status"] == 200
    assert line["items"] == [
        {
            "headline": "The VW ID. SPACE VIZZION is a weird EV sports wagon with a secret message",
            "author": "Chris Davies",
            "published": "2019-11-20T04:31:13-06:00",
            "image": "https://scdn.slashgear.com/wp-content/uploads/2019/11/vw-id-space-vizzion-concept-2-1.jpg",
        }
    ]
    assert line["follow"] == [] and line["error"] is None


@needs_corpus
def test_try_with_a_callback_and_text_on_several_files() -> None:
    files = [corpus_file("nytimes.com", 0)[0], corpus_file("wsj.com", 0)[0]]
    lines = _lines(_trawl("--extract", f"{SPIDERS}:article", "--text", *map(str, files)))
    assert [line["input"] for line in lines] == [str(f) for f in files]
    for line in lines:
        (item,) = line["items"]  # type: ignore[misc]
        assert item["title"] and len(str(line["text"])) > 500 and line["language"].startswith("en")  # type: ignore[union-attr]


@needs_corpus
def test_try_markdown_alone_of_a_saved_page() -> None:
    path, url = corpus_file("slashgear.com")
    (line,) = _lines(_trawl("--markdown", "--url", url, str(path)))
    markdown = str(line["markdown"])
    assert "VIZZION" in markdown and "](https://" in markdown and "text" not in line


def test_try_leaves_out_of_the_main_text_what_text_exclude_matches_as_the_crawl_does(tmp_path: Path) -> None:
    """`trawl try` refused --text-exclude ('unrecognized arguments'): what a selector takes out of --text,
    --markdown and the --changes comparison could not be seen on one page before a crawl."""
    saved = tmp_path / "page.html"
    body = "<p>The article's own paragraph, long enough to be taken as its main text by the extractor here.</p>"
    saved.write_text(f'<html><body><article>{body}<p class="updated">Last updated: today</p></article></body></html>')
    (line,) = _lines(_trawl("--text", "--markdown", "--text-exclude", ".updated", str(saved)))
    assert "own paragraph" in str(line["text"]) and "own paragraph" in str(line["markdown"])
    assert "Last updated" not in str(line["text"]) + str(line["markdown"])


def test_try_reads_a_warcs_responses(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path, "t", 1 << 30)
    for i in range(2):
        writer.write_pair(make_page(f"<h1>Page {i}</h1>".encode(), url=f"http://a.example/{i}", gzipped=True))
    writer.close()
    (warc,) = tmp_path.glob("*.warc.gz")
    rules = tmp_path / "r.toml"
    rules.write_text('[[rule]]\nurl = "a.example"\n[rule.fields]\nh1 = "css:h1::text"\n')
    lines = _lines(_trawl("--extract", str(rules), "--warc", str(warc)))
    assert [(line["url"], line["items"]) for line in lines] == [
        ("http://a.example/0", [{"h1": "Page 0"}]),
        ("http://a.example/1", [{"h1": "Page 1"}]),
    ]


def test_try_cuts_a_warc_records_body_at_max_body(tmp_path: Path) -> None:
    """A record is gzip-compressed in the file: a small WARC can hold a body of gigabytes. It is cut at --max-body
    like a fetched one, so the part past the cap is not parsed (nor held in memory)."""
    body = b"<h1>Head</h1>" + b" " * (2 << 20) + b"<h2>Tail</h2>"
    warc = tmp_path / "big.warc.gz"
    with warc.open("wb") as stream:
        writer = WARCWriter(stream, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        payload = io.BytesIO(body)
        writer.write_record(
            writer.create_warc_record("http://a.example/", "response", payload=payload, http_headers=http)
        )
    assert warc.stat().st_size < 100_000
    rules = tmp_path / "r.toml"
    rules.write_text('[[rule]]\nurl = "a.example"\n[rule.fields]\nh1 = "css:h1::text"\nh2 = "css:h2::text"\n')
    (line,) = _lines(_trawl("--extract", str(rules), "--max-body", "65536", "--warc", str(warc)))
    assert line["items"] == [{"h1": "Head", "h2": None}], line


def test_try_fetches_a_url_once_under_the_address_policy(testweb: TestWeb, tmp_path: Path) -> None:
    url = testweb.seeds(1)[0]
    rules = tmp_path / "r.toml"
    rules.write_text('[[rule]]\nurl = "."\n[rule.fields]\ntitle = "css:h1::text"\n')
    mark = testweb.mark()
    (line,) = _lines(_trawl("--extract", str(rules), *testweb.crawl_args(), url))
    page = testweb.model.respond_url(url).page
    assert page is not None
    assert line["status"] == 200 and line["items"] == [{"title": page.title}]
    assert len(testweb.entries(since=mark)) == 1
    # Without --ip-allow the address policy refuses loopback, as a crawl's would (names still pinned: no DNS query).
    (refused,) = _lines(_trawl("--extract", str(rules), "--resolve", "*.test=127.0.0.1", url))
    assert refused["error"] == "ip-policy" and refused["items"] == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[[rule]]\nurl = "x"\n[rule.fields]\na = "css:h1::text"\nb = "css:div[[["\n', r"r.toml:5: b: css 'div\[\[\['"),
        ('[[rule]]\nurl = "x("\n[rule.fields]\na = "h1"\n', "r.toml:2: url: regex 'x\\(' does not compile"),
        ('[[rule]]\nurl = "x"\ncolour = 1\n[rule.fields]\na = "h1"\n', "r.toml:3: unknown key 'colour'"),
        ('[[rule]]\nurl = "x"\n[rule.fields]\na = { css = "h1", type = "money" }\n', "r.toml:4: field 'a': type must"),
        ('[[rule]]\nurl = "x"\n[rule.fields]\na = "xpath://h1[["\n', "r.toml:4: a: xpath '//h1\\[\\[' does not"),
        ('[[rule]]\nurl = "x"\n[rule.fields\n', "r.toml:3: not valid TOML"),
        ('[[rule]]\nurl = "x"\n', "r.toml:1: every rule needs a \\[rule.fields\\] table"),
        ('[[rule]]\nurl = "x"\nheaders = { "X K" = "v" }\n[rule.fields]\na = "h1"\n', "r.toml:3: headers: not a valid"),
        ('[[rule]]\nurl = "x"\nheaders = { "X" = 1 }\n[rule.fields]\na = "h1"\n', "r.toml:3: headers must be a table"),
        # a field named as a rule's key (README's url and name fields): its own line, not the rule's key's
        ('[[rule]]\nurl = "x"\n[rule.fields]\nurl = "css:a[[::attr(href)"\n', r"r.toml:4: url: css 'a\[\[::attr"),
        ('[[rule]]\nname = "p"\nurl = "x"\n[rule.fields]\nname = { css = "h", type = "s" }\n', "r.toml:5: field"),
        ('[[rule]]\nurl = "x"\nitems = "css:li"\n[rule.fields.items]\ncss = "b"\nre = "("\n', "r.toml:4: items: regex"),
    ],
)
def test_a_broken_rules_file_is_one_error_line_with_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "r.toml").write_text(content)
    (tmp_path / "page.html").write_text("<h1>x</h1>")
    done = _trawl("--extract", "r.toml", "page.html", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith("trawl: error: ")
    assert __import__("re").search(message, line), line


@pytest.mark.parametrize(
    ("module", "spec", "message"),
    [
        ("def parse(page)\n    pass\n", "cb.py:parse", "cb.py:1: syntax error in the --extract callback"),
        ("import json\nraise RuntimeError('boom')\n", "cb:parse", "cb.py:2: --extract cb:parse: cannot import cb"),
        ("x = 1\n", "cb:parse", "--extract cb:parse: cb has no 'parse'"),
        ("", "nosuchmodule:parse", "cannot import nosuchmodule: ModuleNotFoundError"),
        # a script that reads its command line at import: it ended trawl with its own exit (its message, status 1)
        (
            "import sys\nsys.exit('usage: cb.py URL')\n",
            "cb:parse",
            "cb.py:2: --extract cb:parse: cannot import cb: SystemExit: usage: cb.py URL",
        ),
    ],
)
def test_a_callback_that_does_not_import_is_one_error_line(
    tmp_path: Path, module: str, spec: str, message: str
) -> None:
    (tmp_path / "cb.py").write_text(module)
    (tmp_path / "page.html").write_text("<h1>x</h1>")
    done = _trawl("--extract", spec, "page.html", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("trawl: error: ") and message in line, line


def test_crawl_refuses_broken_rules_before_starting(tmp_path: Path) -> None:
    (tmp_path / "r.toml").write_text('[[rule]]\nurl = "x"\n[rule.fields]\na = "css:h1[["\n')
    done = subprocess.run(
        [sys.executable, "-m", "webtrawl", "crawl", "http://a.test/", "--out", "o", "--extract", "r.toml"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 2 and done.stderr.startswith("trawl: error: ") and "r.toml:4:" in done.stderr
    assert not (tmp_path / "o").exists()


def test_try_a_spider_callback_with_data_on_a_saved_page(tmp_path: Path) -> None:
    page = tmp_path / "listing.html"
    page.write_text("<h1>Garden</h1><a class=product href=/p/1>1</a><a class=next href=/c/0/2>next</a>")
    spider = f"{Path(__file__).with_name('shop.py')}:ShopSpider"
    url = "http://shop.test/c/0/1"
    args = ("--spider", spider, "--url", url, "--callback", "parse_listing", "--data", '{"category": "Garden"}')
    (line,) = _lines(_trawl(*args, str(page)))
    assert line["follow"] == ["http://shop.test/p/1", "http://shop.test/c/0/2"]
    assert line["routes"] == {
        "http://shop.test/p/1": {"callback": "parse_product", "data": {"category": "Garden", "listing": url}},
        "http://shop.test/c/0/2": {"callback": "parse_listing", "data": {"category": "Garden"}},
    }
    bad = _trawl(*args[:-1], "[1]", str(page))
    assert bad.returncode == 2 and bad.stderr.startswith("trawl: error: --data: Follow data must be a dict")


_FEED_CALLBACK = """
def parse(page):
    yield {"type": page.content_type, "links": page.xpath("//item/link/text()").getall(), "text": page.text[:6]}
"""


def test_a_saved_feed_or_json_file_is_tried_as_its_kind_as_a_crawl_would_fetch_it(tmp_path: Path) -> None:
    """A saved .xml or .json file was always read as HTML: an XML <link> became an empty void element (xpath found
    nothing) and a rule's content_type never matched, where the crawl gets the server's type for the same bytes."""
    (tmp_path / "cb.py").write_text(_FEED_CALLBACK)
    catalog = b'<?xml version="1.0"?><catalog><item><title>T</title><link>http://a.test/1</link></item></catalog>'
    (tmp_path / "catalog.xml").write_bytes(catalog)
    (tmp_path / "api.json").write_text('{"next": 2}')
    (tmp_path / "page.html").write_text("<p>x</p>")
    (tmp_path / "saved").write_text("<p>x</p>")  # no suffix: HTML, as before
    lines = _lines(_trawl("--extract", "cb:parse", "catalog.xml", "api.json", "page.html", "saved", cwd=tmp_path))
    types = [line["items"][0]["type"] for line in lines]  # type: ignore[index]
    assert types == ["application/xml", "application/json", "text/html", "text/html"]
    assert lines[0]["items"][0]["links"] == ["http://a.test/1"]  # type: ignore[index]
    assert lines[1]["items"][0]["text"] == '{"next'  # type: ignore[index]


def test_a_callback_the_spider_lacks_or_without_a_spider_is_one_error_line(tmp_path: Path) -> None:
    """--callback with a typo printed a line per input with an extract-error; without --spider it was ignored."""
    page = tmp_path / "listing.html"
    page.write_text("<h1>Garden</h1>")
    spider = f"{Path(__file__).with_name('shop.py')}:ShopSpider"
    typo = _trawl("--spider", spider, "--callback", "parse_listin", str(page))
    assert typo.returncode == 2 and typo.stdout == ""
    assert typo.stderr == (
        "trawl: error: --callback: ShopSpider has no callback 'parse_listin' "
        "(its callbacks: parse, parse_listing, parse_product)\n"
    )
    (tmp_path / "cb.py").write_text("def parse(page):\n    yield {}\n")
    plain = _trawl("--extract", "cb:parse", "--callback", "parse_listing", str(page), cwd=tmp_path)
    assert plain.returncode == 2 and plain.stdout == ""
    assert plain.stderr == "trawl: error: --callback needs --spider: a --extract callback has no other callbacks\n"


def test_try_keeps_a_spider_to_its_allowed_domains_as_the_crawl_does(tmp_path: Path) -> None:
    """trawl try listed the offsite links of a spider with allowed_domains as followed, which the crawl drops."""
    page = tmp_path / "product.html"
    page.write_text("<h1>Rake</h1><a class=elsewhere href='http://img.shop.test/y'>sub</a>")
    spider = f"{Path(__file__).with_name('shop.py')}:PortedShop"
    args = ("--spider", spider, "--url", "http://shop.test/p/1", "--callback", "parse_product", str(page))
    (line,) = _lines(_trawl(*args))
    assert line["follow"] == ["http://img.shop.test/y"]
    assert line["dropped"] == {"http://offsite.test/p/1": "scope"}


def test_try_closes_a_spider_as_a_crawl_does(tmp_path: Path) -> None:
    """A spider's closed(reason) (Scrapy's, which ``scrapy parse`` calls too) was never called by trawl try: what it
    writes or flushes there was missing."""
    page = tmp_path / "listing.html"
    page.write_text("<h1>Garden</h1>")
    spider = f"{Path(__file__).with_name('shop.py')}:ClosingShop"
    closed = tmp_path / "closed"
    done = subprocess.run(
        [sys.executable, "-m", "webtrawl", "try", "--spider", spider, str(page)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "SHOP_CLOSED": str(closed)},
    )  # fmt: skip
    assert len(_lines(done)) == 1 and closed.read_text() == "finished\n"
