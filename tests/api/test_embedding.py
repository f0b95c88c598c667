"""``webtrawl.Crawler`` as a library inside another program: what it prints, the plug-ins it is named, and the
Python values its options take."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.api.helpers import html_pages, shop_options
from tests.api.pages import Shop, title, title_but_exit_on_product_1
from tests.fixtures.shop_web import ShopWeb
from webtrawl import ConfigError, Crawler, CrawlResult, StateError
from webtrawl.cli import main
from webtrawl.config import CrawlConfig
from webtrawl.node.startup import prepare_out


def test_progress_lines_go_to_the_webtrawl_logger_not_to_stderr(
    shop_web: ShopWeb, tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The README: the crawl 'leaves the program's logging alone: progress lines go to the webtrawl logger'. They
    were written to stderr, so a program that logs elsewhere (or not at all) got a line every 10 s it could not
    turn off."""
    with caplog.at_level(logging.INFO, logger="webtrawl.progress"):
        result = Crawler(Shop, out=tmp_path / "crawl", max_pages=3, **shop_options(shop_web)).run()
    assert result.stats["fetched"] == 3
    assert "fetched=" not in capfd.readouterr().err
    lines = [r.getMessage() for r in caplog.records if r.name == "webtrawl.progress"]
    assert lines and all(r.levelno == logging.INFO for r in caplog.records if r.name == "webtrawl.progress")
    assert re.search(r"\bfetched=3 .*state=stopped$", lines[-1])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"fetcher": ["tests.fixtures.nowhere:Fetcher"]},
            r"^--fetcher tests\.fixtures\.nowhere:Fetcher: cannot import",
        ),
        (
            {"fetcher": ["tests.fixtures.userfetcher:Nope"]},
            r"^--fetcher .*: tests\.fixtures\.userfetcher has no 'Nope'$",
        ),
        ({"items_to": ["tests.fixtures.nowhere:Sink"]}, r"^--items-to tests\.fixtures\.nowhere:Sink: cannot import"),
        (
            {"records_to": ["tests.fixtures.usersink:Nope"]},
            r"^--records-to .*: tests\.fixtures\.usersink has no 'Nope'$",
        ),
    ],
)
def test_a_plugin_that_does_not_import_is_a_config_error_at_once(
    options: dict[str, list[str]], message: str, tmp_path: Path
) -> None:
    """A fetcher or sink named by an import path that names nothing raised an InputError, which is not the
    ValueError (ConfigError) the README promises for every bad option."""
    out = tmp_path / "crawl"
    with pytest.raises(ConfigError, match=message):
        Crawler(title, out=out, urls=["http://site0.test/"], **options)
    assert not out.exists()


def test_a_user_fetcher_given_options_its_class_does_not_take_is_a_config_error_at_once(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    """A sink's options were checked against its class at start, a fetcher's were not: the crawl started and every
    fetcher process died on the same TypeError (its traceback printed three times) before run() raised."""
    out, log = tmp_path / "crawl", tmp_path / "fetched.txt"
    spec = f"tests.fixtures.userfetcher:LoggingFetcher?path={log}&retries=3"
    with pytest.raises(ConfigError, match=r"^--fetcher .*\?path=.*&retries=3: .*\(ctx, \*\*options\): .*'retries'$"):
        Crawler(Shop, out=out, fetcher=[spec], **shop_options(shop_web))
    with pytest.raises(ConfigError, match=r"^--fetcher .*LoggingFetcher: .*\(ctx, \*\*options\): .*'path'$"):
        Crawler(Shop, out=out, fetcher=["tests.fixtures.userfetcher:LoggingFetcher"], **shop_options(shop_web))
    assert not out.exists()
    spec = f"tests.fixtures.userfetcher:LoggingFetcher?path={log}"  # right: it crawls, through the user's fetcher
    result = Crawler(Shop, out=out, fetcher=[spec], max_pages=3, **shop_options(shop_web)).run()
    assert result.stats["fetched"] == 3 and len(log.read_text().splitlines()) == 3


def test_a_compiled_regex_is_read_as_its_pattern_and_flags(shop_web: ShopWeb, tmp_path: Path) -> None:
    """``include=re.compile(...)`` was read as its repr, ``"re.compile('...', re.IGNORECASE)"``: a regex that
    matched no URL, so the crawl silently followed nothing."""
    only_kitchen = re.compile(r"/C/1/\d+$", re.IGNORECASE)  # the home page's links: only the Kitchen listing pages
    result = Crawler(title, out=tmp_path / "crawl", include=[only_kitchen], **shop_options(shop_web)).run()
    pages = sorted(html_pages(result))
    assert pages == [shop_web.url(path) for path in ("/", "/c/1/1", "/c/1/2", "/c/1/3")]
    assert Crawler(out=tmp_path / "c", exclude=re.compile("(?i)x", re.I | re.S)).config.discovery.exclude == (
        "(?s)(?i)x",  # a flag already inline is not repeated
    )
    verbose = re.compile(r"/p/ \d+  # a product ( page", re.VERBOSE)  # not a regex without its flag: no crash
    assert Crawler(out=tmp_path / "c", include=verbose).config.discovery.include == (f"(?x){verbose.pattern}",)
    with pytest.raises(ConfigError, match=r"^--include: a regex of text, not of bytes: b'x'$"):
        Crawler(out=tmp_path / "c", include=re.compile(b"x"))


def test_a_timedelta_is_read_as_its_seconds(tmp_path: Path) -> None:
    """``max_time=timedelta(minutes=2)`` was refused (``not a number: datetime.timedelta(...)``)."""
    crawler = Crawler(
        out=tmp_path / "crawl",
        max_time=timedelta(minutes=2),
        delay=timedelta(milliseconds=500),
        extract_timeout=timedelta(seconds=2),
        recrawl_after=timedelta(hours=6),
    )
    cfg = crawler.config
    assert cfg.crawl.max_time == 120.0 and cfg.politeness.delay == 0.5 and cfg.extraction.extract_timeout == 2.0
    assert cfg.discovery.recrawl_after == 6 * 3600.0
    with pytest.raises(ConfigError, match=r"^--max-pages: not a whole number: 86400\.0$"):
        Crawler(out=tmp_path / "crawl", max_pages=timedelta(days=1))


def test_a_bad_sitemap_url_or_a_missing_seeds_file_is_a_config_error_at_once(tmp_path: Path) -> None:
    """Both were an InputError from inside run(), after the crawl's directory, crawl.json and Redis were made."""
    out = tmp_path / "crawl"
    with pytest.raises(ConfigError, match=r"^--sitemap: not an http\(s\) URL: 'sitemap\.xml' \(relative URL"):
        Crawler(title, out=out, urls=["http://site0.test/"], sitemap=["sitemap.xml"])
    with pytest.raises(
        ConfigError, match=rf"^cannot read seeds file {tmp_path}/seeds\.txt: No such file or directory$"
    ):
        Crawler(title, out=out, seeds_file=tmp_path / "seeds.txt")
    assert not out.exists()
    (tmp_path / "seeds.txt").write_text("http://site0.test/\n")
    assert Crawler(title, out=out, seeds_file=tmp_path / "seeds.txt").config.crawl.seeds_file == tmp_path / "seeds.txt"


def test_a_crawl_read_back_by_the_name_of_its_directory(shop_web: ShopWeb, tmp_path: Path) -> None:
    """``CrawlResult("shop-crawl").items()``, as ``Crawler(out="shop-crawl")`` is written, raised a TypeError
    (``str / str``): only a Path was read back. Its ``stats`` read 0 for every counter: only run() filled them."""
    out = tmp_path / "crawl"
    ran = Crawler(Shop, out=str(out), max_pages=12, **shop_options(shop_web)).run()
    again = CrawlResult(str(out))
    assert list(again.items()) == list(ran.items()) and list(again.records()) and again.out == out
    assert ran.stats["items"] == len(list(again.items())) > 0
    assert again.stats == ran.stats and again.stats["fetched"] >= 12
    with pytest.raises(ConfigError, match=r"holds no crawl"):
        _ = CrawlResult(tmp_path / "nothing").stats


def test_a_directory_that_holds_no_crawl_is_one_error_and_a_crawl_just_started_reads_empty(tmp_path: Path) -> None:
    """``CrawlResult("mistyped-dir").items()`` read as a crawl that found nothing."""
    with pytest.raises(ConfigError, match=r"mistyped-dir holds no crawl \(no such directory\)"):
        CrawlResult(tmp_path / "mistyped-dir").items()
    (tmp_path / "other").mkdir()
    with pytest.raises(ConfigError, match=r"other holds no crawl \(no node.lock, crawl.json"):
        CrawlResult(tmp_path / "other").records()
    started = tmp_path / "started"
    prepare_out(CrawlConfig(), started).close()  # what a crawl makes first, before its Redis and any page
    assert list(CrawlResult(started).items()) == [] and list(CrawlResult(started).records()) == []


def test_a_rules_file_whose_rule_recrawls_needs_recrawl_after_at_once(tmp_path: Path) -> None:
    """Crawler("rules.toml") loads the rules at once, but a rule's ``recrawl_after`` without the crawl's
    ``recrawl_after`` (the README's own rules file, given as it is) passed, and run() raised an InputError."""
    rules, out = tmp_path / "rules.toml", tmp_path / "crawl"
    rules.write_text('[[rule]]\nurl = "/p/"\nrecrawl_after = "1h"\n[rule.fields]\nname = "css:h1::text"\n')
    with pytest.raises(ConfigError, match=r"rules\.toml: a rule's recrawl_after needs --recrawl-after \(which"):
        Crawler(rules, out=out, urls=["http://site0.test/"])
    assert not out.exists()
    assert Crawler(rules, out=out, urls=["http://site0.test/"], recrawl_after="1d").config.discovery.recrawl_after


def _request_headers(out: Path, name: str) -> list[str]:
    """The values of request header ``name`` in the crawl's WARC request records of pages (not of robots.txt)."""
    found = []
    for path in sorted((out / "warc").glob("*.warc.gz*")):
        with path.open("rb") as stream:
            for record in ArchiveIterator(stream):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.rec_type == "request" and not uri.endswith("/robots.txt"):
                    found.append(record.http_headers.get_header(name))
    return found


def test_any_iterable_is_a_list_and_a_dict_gives_name_value_pairs(shop_web: ShopWeb, tmp_path: Path) -> None:
    """``ports=range(8000, 8010)`` (or a generator, ``dict.keys()``) was read as its repr: ``--ports: not a port
    (1-65535): 'range(8000'``; ``header={"X-Api-Key": "k"}`` and ``resolve={"*.test": "127.0.0.1"}``, as a rule's
    ``headers`` are written, were refused (only ``spider_arg`` took a dict)."""
    options = shop_options(shop_web)
    del options["resolve"], options["ports"], options["ip_allow"]
    out = tmp_path / "crawl"
    result = Crawler(
        Shop,
        out=out,
        ports=range(shop_web.port, shop_web.port + 1),
        ip_allow=(net for net in ["127.0.0.0/8"]),
        resolve={"*.test": "127.0.0.1"},
        header={"X-Api-Key": "k1", "X-Team": "data"},
        max_pages=3,
        **options,
    ).run()
    assert result.stats["fetched"] == 3
    assert _request_headers(out, "X-Api-Key") == ["k1"] * 3 and _request_headers(out, "X-Team") == ["data"] * 3
    cfg = Crawler(out=tmp_path / "c", ports={80: "web", 443: "tls"}.keys(), resolve={"a.test": "10.0.0.1"}).config
    assert cfg.fetch.ports == (80, 443) and cfg.fetch.resolve == ("a.test=10.0.0.1",)


def test_sys_exit_in_a_callback_is_that_pages_extract_error_and_the_crawl_goes_on(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    """SystemExit is no Exception: it ended the parser process, which was started again, fetched the page again and
    ended again, until the whole crawl stopped with 'parser-0 died at start 3 times in a row: exit status 1',
    naming neither the page nor the callback."""
    listing = shop_web.url("/c/0/1")
    options = shop_options(shop_web, urls=[listing], include=[r"/c/0/1$", r"/(p|go)/[0-5]$"])
    result = Crawler(title_but_exit_on_product_1, out=tmp_path / "crawl", **options).run()
    failed = {r["url"]: r["error_detail"] for r in result.records() if r["error"]}
    assert list(failed) == [shop_web.url("/p/1")]
    assert re.fullmatch(r"SystemExit: giving up on this page \(pages\.py:\d+\)", failed[shop_web.url("/p/1")])
    products = sorted(url for url in html_pages(result) if "/p/" in url)  # the pages with no error
    assert products == [shop_web.url(f"/p/{n}") for n in (0, 2, 3, 4, 5)]
    assert result.stats["items"] == 1 + 5  # the listing's and every other product's


UNGUARDED_ASYNC = """
import asyncio, sys
from webtrawl import Crawler

def parse(page):
    yield {"title": page.css("h1::text").get()}

async def main():
    crawler = Crawler(parse, out=sys.argv[1], urls=["http://site0.test/"])
    await crawler.arun()

asyncio.run(main())
"""


def test_a_script_without_the_main_guard_that_crawls_from_asyncio_stops_with_one_clear_message(
    tmp_path: Path,
) -> None:
    """run() checks the guard on the script's frame, but arun() runs the crawl in a thread that has none: the check
    passed, every crawler process died importing the script (its top level crawled again), and the supervisor
    importing it for the callback started a crawl of its own, until 260 lines of tracebacks ended in
    'cannot import ...: ChildFailed: parser-0 died at start 3 times in a row'."""
    script, out = tmp_path / "scrape.py", tmp_path / "crawl"
    script.write_text(UNGUARDED_ASYNC)
    done = subprocess.run(
        [sys.executable, str(script), str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )
    assert done.returncode != 0
    assert done.stderr.count("Traceback") == 1, done.stderr[-4000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"webtrawl.errors.ConfigError: {script}:12: start the crawl under  "
        'if __name__ == "__main__":  (the crawler\'s processes import your script)'
    )
    assert not out.exists()  # nothing started


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("no_jsonl", "did you mean jsonl=False?"),  # was: did you mean 'jsonl'? (which is on by default)
        ("no_warc", "did you mean warc=False?"),
        ("seeds", "seed URLs are urls=[...]; a file of them is seeds_file="),  # was: did you mean 'seeds_file'?
        ("start_urls", "seed URLs are urls=[...]; a file of them is seeds_file="),
        ("no_delay", "did you mean 'delay'?"),  # not a switch: the closest name, as before
    ],
)
def test_an_unknown_option_named_as_on_the_command_line_says_what_to_pass(name: str, hint: str, tmp_path: Path) -> None:
    """The README's ``--no-jsonl`` passed as ``no_jsonl=True`` was answered 'did you mean 'jsonl'?', and
    ``seeds=[...]`` 'did you mean 'seeds_file'?': both the wrong thing to pass."""
    with pytest.raises(ConfigError, match=rf"^unknown option '{name}' \({re.escape(hint)}\)$"):
        Crawler(out=tmp_path / "crawl", **{name: True})


def test_a_user_fetchers_bug_is_each_pages_fetch_bug_and_its_traceback_is_logged_once(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    """Every URL and every try of it logged the same full traceback: a fetcher with a bug buried the log, where a
    callback's is logged once per distinct error."""
    out = tmp_path / "crawl"
    options = shop_options(shop_web, urls=[shop_web.url("/c/0/1")], include=[r"/c/0/1$", r"/p/[0-5]$"], max_retries=2)
    result = Crawler(title, out=out, fetcher=["tests.api.pages:BuggyFetcher"], **options).run()
    failed = {r["url"]: r["error_detail"] for r in result.records() if r["error"]}
    products = (0, 1, 2, 4, 5)  # /p/3 is linked through /go/3, outside include; /p/0 is in the sitemap too
    assert failed == {
        shop_web.url(f"/p/{n}"): f"ValueError: cannot fetch {shop_web.url(f'/p/{n}')} (tried 3 times)" for n in products
    }
    assert result.stats["err:fetch-bug"] == len(products) and result.stats["items"] == 1  # the listing's
    log = (out / "logs" / "fetcher-0.log").read_text()
    assert log.count("Traceback") == 1 and log.count("fetch task failed on ") == 1
    assert "(logged once per distinct error)" in log


def test_a_python_file_given_as_the_target_says_to_name_its_callback(tmp_path: Path) -> None:
    """``Crawler("spider.py")`` (or ``--extract spider.py``) read the script as a rules file: 'spider.py:1: not
    valid TOML: Expected '=' after a key...'."""
    script = tmp_path / "spider.py"
    script.write_text("def parse(page):\n    yield {}\n")
    message = f"{script} is Python, not a rules file: name the function or class to run, as {script}:parse"
    with pytest.raises(ConfigError, match=rf"^{re.escape(message)}$"):
        Crawler(script, out=tmp_path / "crawl", urls=["http://site0.test/"])
    assert Crawler(f"{script}:parse", out=tmp_path / "crawl").config.extraction.extract == f"{script}:parse"


def test_a_crawl_stopped_before_it_started_reports_its_counters(shop_web: ShopWeb, tmp_path: Path) -> None:
    """stop() before run(): the crawl stops at once, its seeds queued, but the result's stats were empty (every
    counter read 0, 'queued' too), as the node stopped before its first look at the counters."""
    crawler = Crawler(Shop, out=tmp_path / "crawl", max_pages=5, **shop_options(shop_web))
    crawler.stop()
    result = crawler.run()
    assert result.stats["queued"] == 1 and result.stats["fetched"] == 0
    assert crawler.run().stats["fetched"] == 5  # the stop was for that run only: this one crawls


def test_a_first_run_that_cannot_reach_its_redis_does_not_hold_the_next_run_to_it(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    """A mistyped redis= on a crawl's first run was saved in crawl.json before Redis was reached, so every later run
    of that out went to the same unreachable URL (and redis="" is refused): only deleting the directory helped. The
    settings are saved once Redis answers."""
    out = tmp_path / "crawl"
    with pytest.raises(StateError, match=re.escape("cannot reach Redis at redis://127.0.0.1:1")):
        Crawler(Shop, out=out, redis="redis://127.0.0.1:1", **shop_options(shop_web)).run()
    assert not (out / "crawl.json").exists()
    result = Crawler(Shop, out=out, max_pages=3, **shop_options(shop_web)).run()  # its own Redis, as meant
    assert result.stats["fetched"] == 3


# Ctrl-C twice at a given moment of the crawl's start: a wrapper of that step sends both SIGINTs, then runs it.
CTRL_C_TWICE_AT_START = """
import functools, json, os, signal, sys
from webtrawl import Crawler
from webtrawl.node import startup
from webtrawl.node.children import Child


def title(page):
    yield {"title": page.css("h1::text").get()}


def twice_then(step, *args, **kwargs):
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)
    return step(*args, **kwargs)


if __name__ == "__main__":
    if sys.argv[2] == "seeds":
        startup.seed = functools.partial(twice_then, startup.seed)
    else:
        start = Child.start
        Child.start = lambda child: twice_then(start, child)
    result = Crawler(title, out=sys.argv[1], **json.loads(sys.argv[3])).run()
    print("interrupted" if result.interrupted else "drained")
"""


@pytest.mark.parametrize("moment", ["seeds", "children"])
def test_ctrl_c_twice_while_the_crawl_starts_quits_at_once_and_run_returns(
    moment: str, shop_web: ShopWeb, tmp_path: Path
) -> None:
    """A second Ctrl-C quits at once (run() returns, ``interrupted``), but one while the seeds were queued or the
    crawl's processes started came out of run() as a KeyboardInterrupt traceback (``trawl crawl``: exit 130 without
    a word), and one in the middle of a process's start made the fork server print a traceback too."""
    script, out = tmp_path / "scrape.py", tmp_path / "crawl"
    script.write_text(CTRL_C_TWICE_AT_START)
    args = [sys.executable, str(script), str(out), moment, json.dumps(shop_options(shop_web))]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-4000:]
    assert done.stdout == "interrupted\n" and "quitting at once" in done.stderr


def test_bytes_are_no_option_value(tmp_path: Path) -> None:
    """Read as their text is, b'MyBot/1' was the User-Agent "b'MyBot/1'" (robots.txt token "b'MyBot")."""
    with pytest.raises(ConfigError, match=r"^--user-agent: bytes, not text: b'MyBot/1'$"):
        Crawler(out=tmp_path, user_agent=b"MyBot/1")
    with pytest.raises(ConfigError, match=r"^--header: bytes, not text: b'X-A: 1'$"):
        Crawler(out=tmp_path, header=[b"X-A: 1"])


@pytest.mark.parametrize(
    ("options", "flags"),
    [
        ({"delay": "1e308"}, ["--delay", "1e308"]),  # was accepted; the crawl then died on it in ms, a traceback
        ({"max_pages": "1" + "0" * 20}, ["--max-pages", "1" + "0" * 20]),  # wrapped round: the crawl stopped at once
    ],
)
def test_too_large_numbers_raise_the_command_line_message(
    options: dict[str, str], flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "crawl"
    with pytest.raises(ConfigError, match="too large") as raised:
        Crawler(out=out, urls=["http://site0.test/"], **options)
    assert main(["crawl", "http://site0.test/", "--out", str(out), *flags]) == 2
    assert capsys.readouterr().err == f"trawl: error: {raised.value}\n"
    assert not out.exists()
