"""A spider ported from Scrapy, run through the Python API on the shop web: its start_requests() (or Scrapy 2.13's
async start()) seed the crawl, and page.follow, follow_all, urljoin and allowed_domains work as a Scrapy user
expects."""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from tests.api.helpers import check_shop, out_files, shop_options
from tests.extract.shop import (
    ApiShop,
    AsyncStartShop,
    CategoryShop,
    CloseSpiderShop,
    ClosingShop,
    CrawlShop,
    KwargsShop,
    PortedShop,
    StartRequestsShop,
    StartsBadly,
)
from tests.fixtures.restartable_redis import RestartableRedis
from tests.fixtures.shop_web import ShopWeb
from tests.node.clusterrun import TRAWL
from webtrawl import Crawler, InputError, Spider
from webtrawl.frontier.connect import connect_sync
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl.node.startreqs import start_key


@pytest.mark.parametrize("spider", [StartRequestsShop, AsyncStartShop])
def test_a_spiders_start_requests_seed_the_crawl_with_their_callbacks_and_a_resume_keeps_them(
    spider: type[Spider], shop_web: ShopWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Scrapy spider ported with its start_requests() (or 2.13's async start()): the method was silently ignored
    (no seeds: the crawl stopped at once). Its seeds reach their callbacks with their data, and a run stopped early
    resumes with them: every product once, with its category, the home page never fetched. The method runs once
    per crawl: it ran again on the resume, repeating its side effects for seeds the frontier had."""
    monkeypatch.setenv("SHOP_START", shop_web.url("/"))
    monkeypatch.setenv("SHOP_START_LOG", str(tmp_path / "starts"))
    out = tmp_path / "crawl"
    first = Crawler(spider, out=out, max_pages=3, **shop_options(shop_web, urls=[])).run()
    assert first.stats["fetched"] == 3 and first.stats["queued"] > 0
    assert {r["url"] for r in first.records()} <= {shop_web.url(f"/c/{c}/1") for c in range(4)}  # seeds first
    result = Crawler(spider, out=out, max_pages=0).run()
    check_shop(shop_web, result)
    fetched = {r["url"] for r in result.records()}
    assert shop_web.url("/") not in fetched and "http://not-crawled.test/" not in fetched
    assert (tmp_path / "starts").read_text() == "start\n"


def test_start_requests_a_kill_interrupted_before_they_were_done_run_again_on_the_resume(
    shop_web: ShopWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 between queuing the seeds and marking start_requests() done leaves this node's claim in Redis: the
    resume takes it over at once and runs the method again (its seeds already queued are dropped as seen): every
    product once, no seed lost."""
    monkeypatch.setenv("SHOP_START", shop_web.url("/"))
    monkeypatch.setenv("SHOP_START_LOG", str(tmp_path / "starts"))
    out = tmp_path / "crawl"
    crawler = Crawler(StartRequestsShop, out=out, max_pages=1, **shop_options(shop_web, urls=[]))
    crawler.run()
    node_id = crawler.config.crawl.node_id
    server = EmbeddedRedis(out / "redis").start()
    try:
        client = connect_sync(server.url)
        client.set(start_key("wt"), node_id, px=600_000)  # the state the kill left: its claim, not 'done'
        client.close()
    finally:
        server.stop()
    result = Crawler(StartRequestsShop, out=out, max_pages=0).run()
    check_shop(shop_web, result)
    assert (tmp_path / "starts").read_text() == "start\nstart\n"


def test_a_spider_ported_from_scrapy_scrapes_the_shop_and_stays_on_its_allowed_domains(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    """page.follow of selectors, follow_all(css=), urljoin and allowed_domains, end to end: every product once with
    its category; the offsite link each product yields is dropped (scope), never fetched."""
    result = Crawler(PortedShop, out=tmp_path / "crawl", **shop_options(shop_web)).run()
    check_shop(shop_web, result)
    assert not [r for r in result.records() if "offsite.test" in r["url"]]
    dropped = [
        json.loads(line) for path in out_files(tmp_path / "crawl", "dropped") for line in path.read_text().splitlines()
    ]
    offsite = {row["url"] for row in dropped if row["reason"] == "scope"}
    assert offsite == {url.replace("//shop.test", "//offsite.test") for url in shop_web.category_of}


def test_a_spider_whose_callbacks_take_scrapys_cb_kwargs_scrapes_the_shop_unchanged(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    result = Crawler(KwargsShop, out=tmp_path / "crawl", **shop_options(shop_web)).run()
    check_shop(shop_web, result)
    assert {i["fields"]["number"] for i in result.items()} == set(range(1, shop_web.pages + 1))
    assert not [r for r in result.records() if r["error"] == "extract-error"]


def test_seeds_outside_a_spiders_allowed_domains_are_dropped_as_scrapys_offsite_filter_drops_start_requests(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    """A command-line seed on another host was crawled although the spider's allowed_domains excludes it (Scrapy
    2.11+ filters start requests too): it is written to dropped/ with reason scope and never fetched."""
    out = tmp_path / "crawl"
    offsite = shop_web.url("/").replace("//shop.test", "//offsite.test")
    result = Crawler(PortedShop, out=out, **shop_options(shop_web, urls=[shop_web.url("/"), offsite])).run()
    check_shop(shop_web, result)
    assert not [r for r in result.records() if "offsite.test" in r["url"]]
    dropped = [json.loads(line) for path in out_files(out, "dropped") for line in path.read_text().splitlines()]
    assert {"url": offsite, "reason": "scope", "parent": "", "depth": 0} in dropped
    scoped = [d for d in dropped if d["reason"] == "scope"]
    assert result.stats["drop:scope"] == len(scoped)  # the seed counted as the parsers count the links they drop


def test_a_spider_whose_every_seed_is_outside_its_allowed_domains_stops_in_one_line(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    offsite = shop_web.url("/").replace("//shop.test", "//offsite.test")
    with pytest.raises(InputError, match=r"^every seed \(1\) is outside the spider's allowed_domains \(shop.test\)"):
        Crawler(PortedShop, out=tmp_path / "crawl", **shop_options(shop_web, urls=[offsite])).run()
    assert not shop_web.log.entries()


def test_spider_arguments_reach_every_parser_and_a_resume_keeps_them(shop_web: ShopWeb, tmp_path: Path) -> None:
    """Scrapy's ``-a category=Books``: the products of that category only, from both parsers, also after a run
    stopped early is resumed without the argument given again (crawl.json keeps it, as the crawl's other options)."""
    out = tmp_path / "crawl"
    args = {"category": "Books"}
    first = Crawler(CategoryShop, out=out, max_pages=3, spider_arg=args, **shop_options(shop_web)).run()
    assert first.stats["queued"] > 0  # stopped early: the resume has the rest
    result = Crawler(CategoryShop, out=out, max_pages=0).run()
    books = {url for url, category in shop_web.category_of.items() if category == "Books"}
    assert {i["url"] for i in result.items()} == books
    assert {i["fields"]["category"] for i in result.items()} == {"Books"}


def test_a_spider_reading_an_apis_json_pages_with_page_json_as_scrapys_response_json(
    shop_web: ShopWeb, tmp_path: Path
) -> None:
    """Scrapy's scroll tutorial spider: ``response.json()`` was missing (every page an extract-error)."""
    api = shop_web.url("/api/products?page=1")
    result = Crawler(ApiShop, out=tmp_path / "crawl", **shop_options(shop_web, urls=[api])).run()
    products = [i["fields"] for i in result.items()]
    assert sorted(p["of"] for p in products) == sorted(shop_web.category_of)
    assert all(p["category"] == shop_web.category_of[p["of"]] for p in products)


def test_a_spiders_own_links_pass_the_trap_guard_as_scrapys_do(shop_web: ShopWeb, tmp_path: Path) -> None:
    """The API's ?page=N links the spider yields are its own: with --max-query-variants 2 the pages past the guard's
    count were dropped as trap-query, and their products lost (Scrapy follows what a spider yields)."""
    api = shop_web.url("/api/products?page=1")
    options = shop_options(shop_web, urls=[api], max_query_variants=2)
    result = Crawler(ApiShop, out=tmp_path / "crawl", **options).run()
    assert sorted(i["fields"]["of"] for i in result.items()) == sorted(shop_web.category_of)
    assert not result.stats.get("drop:trap-query")


def test_close_spider_in_a_callback_ends_the_crawl_keeping_what_it_yielded(
    shop_web: ShopWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scrapy's CloseSpider: there was none, so a spider could not end its crawl (stop when the items are old enough,
    when a quota is reached); raising it was the page's extract-error and the crawl went on."""
    closed = tmp_path / "closed.log"
    monkeypatch.setenv("SHOP_CLOSED_LOG", str(closed))
    options = shop_options(shop_web, delay=0.5)  # the whole shop: ~45 s; the first product comes within seconds
    result = Crawler(CloseSpiderShop, out=tmp_path / "crawl", **options).run()
    items = list(result.items())
    assert 1 <= len(items) < len(shop_web.category_of), len(items)  # ended, its item kept
    assert not [r for r in result.records() if r.get("error") == "extract-error"]  # not a page's error
    # closed(reason): the parser whose callback raised it has its reason, the others were stopped (shutdown)
    reasons = closed.read_text().splitlines()
    assert set(reasons) <= {"enough products", "shutdown"} and "enough products" in reasons


def test_a_start_request_that_is_not_a_url_stops_the_crawl_in_one_line(
    shop_web: ShopWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_START_FAULT", "relative")
    out = tmp_path / "crawl"
    with pytest.raises(
        InputError, match=r"^--spider .*StartsBadly: start_requests\(\): not an http\(s\) URL: '/c/0/1'"
    ):
        Crawler(StartsBadly, out=out, **shop_options(shop_web, urls=[])).run()
    assert not (out / "redis").exists()  # nothing started


def test_a_seed_trawl_seed_queued_outside_a_spiders_allowed_domains_is_not_fetched(
    shop_web: ShopWeb, tmp_path: Path, restartable_redis: RestartableRedis
) -> None:
    """A shared crawl seeded with ``trawl seed`` (which loads no spider) fetched a seed on another host although the
    nodes' spider keeps to allowed_domains: the check a node makes of its own seeds never saw it. The fetchers make
    it too, on seeds (depth 0): no request, a record refused for scope."""
    offsite = shop_web.url("/").replace("//shop.test", "//offsite.test")
    seeded = subprocess.run(
        [*TRAWL, "seed", "--redis", restartable_redis.url, "--url", shop_web.url("/"), "--url", offsite],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert seeded.returncode == 0, seeded.stderr
    options = shop_options(shop_web, urls=[], redis=restartable_redis.url)
    result = Crawler(PortedShop, out=tmp_path / "node1", **options).run()
    check_shop(shop_web, result)
    assert [r["error"] for r in result.records() if "offsite.test" in r["url"]] == ["scope"]  # fetched: None


def test_a_scrapy_crawlspider_with_rules_scrapes_the_shop(shop_web: ShopWeb, tmp_path: Path) -> None:
    """A CrawlSpider ported with its rules (Rule, LinkExtractor): was refused (no such class). The listings are
    followed, every product is an item once with the rule's cb_kwargs, and a link no rule matches is not fetched."""
    result = Crawler(CrawlShop, out=tmp_path / "crawl", **shop_options(shop_web)).run()
    items = list(result.items())
    assert Counter(item["url"] for item in items) == {url: 1 for url in shop_web.category_of}
    for item in items:
        number = item["url"].rsplit("/", 1)[1]
        assert item["fields"] == {"name": f"Product {number}", "shop": "the shop", "callback": "parse_rule"}
    fetched = {r["url"].split(str(shop_web.port))[1] for r in result.records()}
    assert "/about" not in fetched and "/c/0/1" in fetched


def test_a_spiders_closed_is_called_in_each_parser_with_scrapys_reason(
    shop_web: ShopWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scrapy's ``closed(reason)`` (a spider closing the connection or file its __init__ opened) was never called.
    Each parser process's spider is told when the process ends: ``finished`` when the crawl has nothing left,
    ``shutdown`` when it stops before (here --max-pages)."""
    closed = tmp_path / "closed.txt"
    monkeypatch.setenv("SHOP_CLOSED", str(closed))
    result = Crawler(ClosingShop, out=tmp_path / "crawl", **shop_options(shop_web)).run()
    check_shop(shop_web, result)
    assert closed.read_text().split() == ["finished", "finished"]  # two parsers
    closed.unlink()
    Crawler(ClosingShop, out=tmp_path / "stopped", max_pages=3, **shop_options(shop_web)).run()
    assert closed.read_text().split() == ["shutdown", "shutdown"]
