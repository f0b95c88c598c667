"""``webtrawl.Crawler`` on the local test web: from a script, from a thread of another program, from asyncio, a
resume of the same ``out``, and the one-line errors of bad input."""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.api.helpers import check_shop, html_pages, out_files, shop_options, small_crawl, title_per_page
from tests.api.pages import Shop, title
from tests.extract.spiders import Headlines
from tests.fixtures.shop_web import ShopWeb
from tests.node.crawlrun import stats
from webtrawl import ConfigError, Crawler, CrawlResult, InputError
from webtrawl.cli import main
from webtrawl.node.saved import NODE_LOCK
from webtrawl.node.supervisor import Node
from webtrawl_testweb import TestWeb, WebOptions

SCRIPT = """
import json, sys
from webtrawl import Crawler

def parse(page):  # defined in the script: the crawler's parsers import it from the script's file
    yield {"title": page.css("h1::text").get()}

if __name__ == "__main__":
    result = Crawler(parse, out=sys.argv[2], **json.loads(sys.argv[1])).run()
    print(json.dumps({"stats": result.stats, "items": list(result.items()), "pages": len(list(result.records()))}))
"""


def _small_web(make_testweb: Callable[..., TestWeb]) -> TestWeb:
    return make_testweb(6, 7, options=WebOptions(corpus_fraction=0.0, max_pages=6))


def _run_script(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "scrape.py"
    script.write_text(textwrap.dedent(source))
    return subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300, cwd=tmp_path
    )


def _check_titles(web: TestWeb, result: CrawlResult) -> None:
    """One title item per fetched HTML page, the model's title, none lost or doubled."""
    pages = html_pages(result)
    assert len(pages) == len(set(pages)) > 10
    per_page = title_per_page(result)
    assert per_page == {url: 1 for url in pages}
    for item in result.items():
        model_page = web.model.respond_url(item["url"]).page
        assert model_page is not None and item["fields"]["title"] == model_page.title
    assert result.stats["items"] == len(pages)


def test_a_script_with_the_main_guard_crawls_with_a_callback_defined_in_it(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    web = _small_web(make_testweb)
    out = tmp_path / "crawl"
    options = {**small_crawl(web), "urls": web.seeds(2)}
    done = _run_script(tmp_path, SCRIPT, json.dumps(options), str(out))
    assert done.returncode == 0, done.stderr[-4000:]
    printed = json.loads(done.stdout)
    saved = json.loads((out / "crawl.json").read_text())  # the script by its file: a command line resume finds it
    assert saved["extract"] == f"{(tmp_path / 'scrape.py').resolve()}:parse"
    result = CrawlResult(out, printed["stats"])
    _check_titles(web, result)
    assert printed["items"] == list(result.items())
    assert printed["pages"] == len(list(result.records())) > printed["stats"]["fetched"] > 10  # and refused URLs


def test_a_script_without_the_main_guard_stops_with_one_clear_message(tmp_path: Path) -> None:
    guarded = SCRIPT[SCRIPT.index("if __name__") :]
    unguarded = SCRIPT.replace(guarded, textwrap.dedent(guarded.split("\n", 1)[1]))
    out = tmp_path / "crawl"
    done = _run_script(tmp_path, unguarded, json.dumps({"urls": ["http://site0.test/"]}), str(out))
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        f"webtrawl.errors.ConfigError: {tmp_path / 'scrape.py'}:8: start the crawl under  "
        'if __name__ == "__main__":  (the crawler\'s processes import your script)'
    )
    assert not (out / "redis").exists()  # nothing started


@pytest.mark.parametrize("definition", ["def Parse(page):\n    return {}", "class Parse(Spider):\n    pass"])
def test_code_defined_in_a_notebook_or_repl_is_refused_with_one_clear_message(definition: str, tmp_path: Path) -> None:
    code = "\n".join(
        [
            "from webtrawl import Crawler, ConfigError, Spider",
            definition,
            "try:",
            f"    Crawler(Parse, out={str(tmp_path / 'crawl')!r})",
            "except ConfigError as exc:",
            "    print(exc)",
        ]
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "Parse is defined in an interactive session (a notebook or a REPL), which the crawler's processes cannot "
        "import: put it in a .py file and import it from there"
    )


def test_a_crawler_process_importing_the_script_again_does_not_crawl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second line of defence, should a script start its crawl where the guard check cannot see it: a spawned
    child still importing the script (multiprocessing's ``_inheriting``) refuses to start one."""
    monkeypatch.setattr(multiprocessing.current_process(), "_inheriting", True, raising=False)
    with pytest.raises(ConfigError, match=r"^a crawler process imported the script that started the crawl: start"):
        Crawler(out=tmp_path / "crawl")


def test_a_spider_in_a_thread_of_another_program_scrapes_the_shop_and_leaves_signals_and_logging_alone(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    sigint, sigterm = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    crawler = Crawler(Shop, out=tmp_path / "crawl", **shop_options(shop_web))
    outcome: list[CrawlResult | BaseException] = []

    def work() -> None:
        try:
            outcome.append(crawler.run())
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=work)
    thread.start()
    seen = set()
    while thread.is_alive():  # the host's handlers stay in place all along, not only at the end
        seen.add((signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), tuple(root.handlers)))
        thread.join(0.05)
    assert seen <= {(sigint, sigterm, tuple(handlers))}
    assert root.level == level
    [result] = outcome
    assert isinstance(result, CrawlResult), result
    check_shop(shop_web, result)


def test_arun_crawls_from_asyncio_while_the_loop_goes_on(make_testweb: Callable[..., TestWeb], tmp_path: Path) -> None:
    web = _small_web(make_testweb)
    crawler = Crawler(title, out=tmp_path / "crawl", urls=web.seeds(2), **small_crawl(web))

    async def both() -> tuple[CrawlResult, int]:
        ticks = 0
        task = asyncio.create_task(crawler.arun())
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.01)
        return await task, ticks

    result, ticks = asyncio.run(both())
    assert ticks > 10  # the event loop ran while the crawl did
    _check_titles(web, result)


def test_arun_raises_what_run_raises(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^no seeds"):  # a spider without start_urls: known once it is built
        asyncio.run(Crawler(Shop, out=tmp_path / "crawl").arun())
    assert not (tmp_path / "crawl").exists()  # nor its Redis: it failed before either was made


def test_a_new_crawl_without_seeds_fails_before_anything_starts(tmp_path: Path) -> None:
    """A crawl given no seed created its directory and started its Redis, then failed."""
    out = tmp_path / "crawl"
    with pytest.raises(InputError, match=r"^no seeds: give URLs, --seeds FILE, --sitemap URL"):
        Crawler(title, out=out).run()
    assert not out.exists()


def test_cancelling_arun_stops_the_crawl_with_its_in_flight_pages_stored(testweb: TestWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    crawler = Crawler(title, out=out, urls=testweb.seeds(3), **small_crawl(testweb))

    async def cancel_after_some_items() -> None:
        task = asyncio.create_task(crawler.arun())
        # read once the crawl has started (its node lock, made as it starts): before, out holds no crawl yet
        while not (out / NODE_LOCK).exists() or sum(1 for _ in CrawlResult(out).items()) < 10:
            assert not task.done(), task.result()
            await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task  # returns once the crawl has stopped

    asyncio.run(cancel_after_some_items())
    stopped = CrawlResult(out)
    pages = html_pages(stopped)
    assert title_per_page(stopped) == {url: 1 for url in pages}  # every page fetched before the stop has its items
    assert len(pages) < len(testweb.model.expected_crawl(testweb.seeds(3)).fetched)  # stopped early
    assert stats(out)["counters"]["queued"] > 0  # the rest is still queued for a resume


def test_running_the_same_out_again_resumes_the_crawl(make_testweb: Callable[..., TestWeb], tmp_path: Path) -> None:
    web = _small_web(make_testweb)
    out = tmp_path / "crawl"
    first = Crawler(title, out=out, urls=web.seeds(2), max_pages=8, **small_crawl(web)).run()
    assert 0 < first.stats["fetched"] <= 8 and first.stats["queued"] > 0
    second = Crawler(title, out=out, max_pages=0).run()  # no seeds: the crawl's own, and its saved settings
    assert second.stats["fetched"] > first.stats["fetched"] and second.stats["queued"] == 0
    fetched = [json.loads(line)["url"] for path in out_files(out, "records") for line in path.read_text().splitlines()]
    assert len(fetched) == len(set(fetched))  # nothing fetched twice
    _check_titles(web, second)


def _locked(out: Path) -> bool:
    """Whether a crawl holds ``out`` (its ``node.lock``), as a second ``trawl crawl`` would find it."""
    with (out / "node.lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
        return False


def test_a_second_crawl_into_a_running_crawls_out_is_refused_in_one_line(testweb: TestWeb, tmp_path: Path) -> None:
    out = tmp_path / "crawl"
    crawler = Crawler(title, out=out, urls=testweb.seeds(3), **small_crawl(testweb))
    thread = threading.Thread(target=crawler.run)
    thread.start()
    try:
        while not ((out / "node.lock").exists() and _locked(out)):
            assert thread.is_alive()
            thread.join(0.02)
        with pytest.raises(InputError, match=rf"^another trawl process is already crawling into {out}$"):
            Crawler(title, out=out, urls=testweb.seeds(1), **small_crawl(testweb)).run()
    finally:
        crawler.stop()
        thread.join()


def test_a_finished_run_releases_its_out_while_the_program_still_holds_the_node(
    make_testweb: Callable[..., TestWeb], tmp_path: Path
) -> None:
    web = _small_web(make_testweb)
    out = tmp_path / "crawl"
    node = Node(Crawler(title, out=out, urls=web.seeds(1), max_pages=2, **small_crawl(web)).config)
    node.run()
    assert not _locked(out)  # was released only when the node was collected: a resume in the same program failed


@pytest.mark.parametrize(
    ("options", "flags"),
    [
        ({"delay": "soon"}, ["--delay", "soon"]),
        ({"ports": "80,70000"}, ["--ports", "80,70000"]),
        ({"max_body": "1GiB"}, ["--max-body", "1GiB"]),  # a body over the parser frames' cap
        ({"resolve": ["site0.test"]}, ["--resolve", "site0.test"]),
        ({"items_to": ["csv:items"]}, ["--items-to", "csv:items"]),
        ({"proxy": ["socks://p:1"]}, ["--proxy", "socks://p:1"]),
    ],
)
def test_a_bad_option_raises_one_value_error_with_the_command_line_message(
    options: dict[str, Any], flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "crawl"
    with pytest.raises(ConfigError) as raised:
        Crawler(out=out, urls=["http://site0.test/"], **options)
    assert isinstance(raised.value, ValueError)
    assert main(["crawl", "http://site0.test/", "--out", str(out), *flags]) == 2
    assert capsys.readouterr().err == f"trawl: error: {raised.value}\n"
    assert not out.exists()  # refused before anything started


def test_values_of_python_types_are_read_as_their_text_is(tmp_path: Path) -> None:
    crawler = Crawler(out=tmp_path, ports=[80, 8080], ip_allow="10.0.0.0/8", delay=2, warc=False, max_pages=5)
    cfg = crawler.config
    assert list(cfg.fetch.ports) == [80, 8080]
    assert list(cfg.fetch.ip_allow) == ["10.0.0.0/8"] and cfg.politeness.delay == 2.0 and cfg.crawl.max_pages == 5
    assert cfg.output.warc is False
    with pytest.raises(ConfigError, match=r"^--ports: .*70000"):
        Crawler(out=tmp_path, ports=[80, 70000])


def test_an_unknown_option_names_the_closest_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^unknown option 'dealy' \(did you mean 'delay'\?\)$"):
        Crawler(out=tmp_path, dealy=2.0)
    with pytest.raises(ConfigError, match=r"^unknown option 'extract-timeout' \(did you mean 'extract_timeout'\?\)$"):
        options: dict[str, Any] = {"extract-timeout": 2.0}
        Crawler(out=tmp_path, **options)


def test_targets_name_what_the_parsers_import(tmp_path: Path) -> None:
    crawler = Crawler(title, out=tmp_path)
    assert crawler.config.extraction.extract == "tests.api.pages:title"

    def nested(page: object) -> None:
        return None

    with pytest.raises(ConfigError, match="must be defined at the top level of a module"):
        Crawler(nested, out=tmp_path)
    with pytest.raises(ConfigError, match="give what to extract once"):
        Crawler(title, out=tmp_path, extract="rules.toml")
    assert Crawler(Shop, out=tmp_path).config.extraction.spider == "tests.api.pages:Shop"
    assert Crawler(Headlines, out=tmp_path).config.extraction.extract == "tests.extract.spiders:Headlines"
    with pytest.raises(ConfigError, match=r"ShopWeb is neither a webtrawl\.Spider subclass nor an extractor"):
        Crawler(ShopWeb, out=tmp_path)
    with pytest.raises(ConfigError, match="cannot crawl with a int"):
        Crawler(3, out=tmp_path)


def test_no_trawl_toml_or_environment_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "trawl.toml").write_text('delay = "bogus"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRAWL_MAX_PAGES", "bogus")
    crawler = Crawler(out=tmp_path / "crawl", urls=["http://site0.test/"])
    assert crawler.config.politeness.delay == 1.0 and crawler.config.crawl.max_pages == 0
    assert os.environ["TRAWL_MAX_PAGES"] == "bogus"


def test_a_resume_may_swap_a_spider_for_a_callback_or_rules_and_back(shop_web: ShopWeb, tmp_path: Path) -> None:
    """``extract`` and ``spider`` are one choice: the one given replaces the other one the crawl saved (as any given
    option replaces its saved value), not 'give one of them' to a user who gave one."""
    out = tmp_path / "crawl"
    first = Crawler(Shop, out=out, max_pages=3, **shop_options(shop_web)).run()
    assert first.stats["fetched"] == 3 and first.stats["queued"] > 0
    second = Crawler(title, out=out, max_pages=6).run()
    assert second.stats["fetched"] == 6
    assert not Crawler(title, out=out).config.extraction.spider
    assert not Crawler(Shop, out=out).config.extraction.extract  # saved: title; given: the spider
    titled = [i for i in second.items() if "title" in i["fields"]]
    assert titled and all(i["fields"]["title"] for i in titled)  # the resumed pages went to the callback


def test_a_counter_the_crawl_never_counted_reads_zero(shop_web: ShopWeb, tmp_path: Path) -> None:
    """The README's example prints ``result.stats["items"]``: a crawl that found no item (here: only the home page)
    printed a KeyError traceback instead of '0 items'."""
    result = Crawler(Shop, out=tmp_path / "crawl", max_pages=1, **shop_options(shop_web)).run()
    assert result.stats["fetched"] == 1
    assert result.stats["items"] == 0 and result.stats["err:extract-error"] == 0
    assert "items" not in result.stats and result.stats.get("items") is None  # what was counted stays as it was
    assert CrawlResult(tmp_path / "crawl").stats["items"] == 0


def test_bad_seed_urls_raise_one_config_error_at_once(tmp_path: Path) -> None:
    """``urls=[3]`` was an AttributeError from inside run(), ``urls=None`` a TypeError, a URL that is not http(s)
    an InputError (not a ValueError) once the node had started."""
    out = tmp_path / "crawl"
    with pytest.raises(ConfigError, match=r"^urls: not a URL string: 3$"):
        Crawler(out=out, urls=["http://site0.test/", 3])  # type: ignore[list-item]
    with pytest.raises(ConfigError, match=r"^urls: not an http\(s\) URL: 'ftp://site0\.test/' \(not an http"):
        Crawler(out=out, urls=["ftp://site0.test/"])
    with pytest.raises(ConfigError, match=r"^urls: not an http\(s\) URL: 'site0\.test/a'"):
        Crawler(out=out, urls="site0.test/a")
    with pytest.raises(ConfigError, match=r"^urls: 'http://\*\*\*@site0\.test/' names a user name or password"):
        Crawler(out=out, urls="http://user:s3cret@site0.test/")
    assert not out.exists()
    assert Crawler(out=out, urls=None).config.crawl.seeds == ()  # as if not given
    assert Crawler(out=out, urls=(" http://Site0.test/a ",)).config.crawl.seeds == (" http://Site0.test/a ",)


def test_a_broken_rules_file_raises_one_config_error_at_once(tmp_path: Path) -> None:
    """Crawler("rules.toml") is checked where the options are: a ValueError with trawl's FILE:LINE line, not an
    InputError from inside run() once the node had started."""
    rules, out = tmp_path / "r.toml", tmp_path / "crawl"
    rules.write_text('[[rule]]\nurl = "x"\n[rule.fields]\na = "css:h1[["\n')
    with pytest.raises(ConfigError, match=rf"^{rules}:4: a: css 'h1\[\[' does not compile"):
        Crawler(rules, out=out, urls=["http://site0.test/"])
    with pytest.raises(ConfigError, match=rf"^{rules}:4: a: css"):
        Crawler(out=out, urls=["http://site0.test/"], extract=str(rules))
    with pytest.raises(ConfigError, match=r"^cannot read rules file .*nope\.toml: No such file"):
        Crawler(tmp_path / "nope.toml", out=out)
    assert not out.exists()


def test_a_resume_refuses_a_setting_fixed_when_the_crawl_was_created(shop_web: ShopWeb, tmp_path: Path) -> None:
    """--politeness-key and --shards are the frontier's shape, --expected-urls and --bloom-error its seen filter's:
    a resume given another value went on with the crawl's own, silently, and saved the new one in crawl.json,
    which then said what the crawl did not do."""
    out = tmp_path / "crawl"
    Crawler(Shop, out=out, max_pages=1, **shop_options(shop_web)).run()
    for options, message in [
        ({"politeness_key": "domain"}, r"--politeness-key: .* with host, and it stays: .*--out, for domain\)$"),
        ({"shards": 8}, r"--shards: .* was created with 64, and it stays"),
        # the seen filter's size: a first run stopped by a bad line of its seeds file had created the crawl, and the
        # run again with the file fixed and a bigger --expected-urls went on with the filter of the default size
        ({"expected_urls": 5_000_000}, r"--expected-urls: .* was created with 1000000, and it stays"),
        ({"bloom_error": 0.001}, r"--bloom-error: .* was created with 0\.0001, and it stays"),
    ]:
        with pytest.raises(InputError, match=rf"^{message}"):
            Crawler(Shop, out=out, **options).run()
        assert json.loads((out / "crawl.json").read_text())["politeness_key"] == "host"
    resumed = Crawler(Shop, out=out, max_pages=2, politeness_key="host", shards=64).run()  # the same: fine
    assert resumed.stats["fetched"] == 2
