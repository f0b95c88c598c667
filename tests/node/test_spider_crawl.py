"""End to end with a spider: ``trawl crawl --spider module:Class`` on the shop (listing -> detail -> pagination),
items read where a user reads them (``items/*.jsonl``): every product once, each with its listing's category, none
lost or doubled by a kill -9 of the whole node and a rerun."""

from __future__ import annotations

import os
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.extract.shop import __file__ as shop_file
from tests.fixtures.broker_fixtures import NATS_SERVER
from tests.fixtures.shop_web import ShopWeb
from tests.fixtures.usersink import collected
from tests.node.clusterrun import NodeRun
from tests.node.crawlrun import Crawl, records, taken_back, wait_until
from webtrawl import CrawlResult
from webtrawl_testweb import duplicate_fetches
from webtrawl_testweb.local_cluster import LocalRedisCluster

SPIDER = f"{shop_file}:ShopSpider"


def _items(out: Path) -> list[dict[str, Any]]:
    return records(out, "items")


def _args(shop: ShopWeb) -> list[str]:
    return [*shop.crawl_args(), "--delay", "0.05", "--robots-retry", "0.2", "--fetchers", "2", "--parsers", "2"]


def _check_products(shop: ShopWeb, items: list[dict[str, Any]]) -> None:
    """Every product has an item with its own category, from a listing page of that category."""
    by_url = {item["url"]: item["fields"] for item in items}
    assert set(by_url) == set(shop.category_of)
    for url, fields in by_url.items():
        category = shop.category_of[url]
        assert fields["category"] == category, (url, fields)
        assert fields["name"] == "Product " + url.rsplit("/", 1)[1] and fields["callback"] == "parse_product"
        listing = fields["listing"]
        assert re.fullmatch(rf"{re.escape(shop.url('/c/'))}\d+/\d+", listing)
        assert shop.category_of[url] == _category_of_listing(listing)


def _category_of_listing(url: str) -> str:
    from tests.fixtures.shop_web import CATEGORIES

    return CATEGORIES[int(url.split("/")[-2])]


def test_trawl_crawl_spider_scrapes_the_shop_from_its_start_urls(
    shop_web: ShopWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_START", shop_web.url("/"))
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*_args(shop_web), "--spider", SPIDER])  # no seed URLs: the spider's start_urls
    assert crawl.wait(300) == 0, crawl.log()[-4000:]

    items = _items(out)
    assert Counter(i["url"] for i in items).most_common(1)[0][1] == 1  # none doubled
    _check_products(shop_web, items)
    fetched = {r["url"] for r in records(out)}
    assert shop_web.url("/about") not in fetched  # only what the spider followed: no sitemap from robots.txt
    assert shop_web.url("/sitemap.xml") not in fetched
    assert {r["url"] for r in records(out) if r.get("redirect")} == {
        url.replace("/p/", "/go/") for url in shop_web.category_of if int(url.rsplit("/", 1)[1]) % 3 == 0
    }


def test_kill_9_and_rerun_lose_and_double_no_item(
    shop_web: ShopWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_START", shop_web.url("/"))
    out = tmp_path / "crawl"
    total = len(shop_web.category_of)
    kill_after = random.Random(os.getpid()).randint(total // 5, total // 2)
    crawl = Crawl(out, [*_args(shop_web), "--spider", SPIDER])
    wait_until(lambda: len(_items(out)) >= kill_after, 300, f"{kill_after} items", crawl)
    crawl.kill_node()

    rerun = Crawl(out, _args(shop_web), log_name="rerun.log")  # the saved settings name the spider
    assert rerun.wait(300) == 0, rerun.log()[-4000:]
    taken = taken_back(rerun.log())

    items = _items(out)
    _check_products(shop_web, items)  # none lost, each with its category after the kill
    # An item is written twice only for a page in flight at the kill (fetched again after the rerun).
    doubled = {url: n for url, n in Counter(i["url"] for i in items).items() if n > 1}
    assert sum(n - 1 for n in doubled.values()) <= taken, (doubled, taken)
    assert set(doubled) <= set(duplicate_fetches(shop_web.log.entries()))
    # What a reader gets (the API's items(), like trawl export): each product once, its last fetch's item.
    read = list(CrawlResult(out).items())
    assert sorted(i["url"] for i in read) == sorted({i["url"] for i in items})
    _check_products(shop_web, read)


def test_a_user_sink_whose_close_fails_is_one_error_line_and_keeps_every_item(
    shop_web: ShopWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each parser printed a traceback of the sink's exception when it ended (and skipped the rest of its end: its
    batch log, the spider's ``closed``): the rows it had flushed are all there, so one ERROR line says so."""
    monkeypatch.setenv("SHOP_START", shop_web.url("/"))
    out, sunk = tmp_path / "crawl", tmp_path / "sunk.jsonl"
    sink = f"tests.fixtures.usersink:CloseFailsSink?path={sunk}"
    crawl = Crawl(out, [*_args(shop_web), "--spider", SPIDER, "--items-to", sink])
    assert crawl.wait(300) == 0, crawl.log()[-4000:]
    log = crawl.log()
    assert "Traceback" not in log, log[-4000:]
    failed = [line for line in log.splitlines() if "closing it failed" in line]
    assert len(failed) == 2 and all("RuntimeError: connection reset while closing" in line for line in failed)
    assert sorted(row["url"] for row in collected(sunk)) == sorted(shop_web.category_of)


def test_a_row_the_sink_refuses_for_good_stops_the_crawl_with_its_one_line(
    shop_web: ShopWeb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nats_subject: str
) -> None:
    """A row over NATS's max_payload (or MariaDB's max_allowed_packet, RabbitMQ's max_message_size) is a ConfigError
    in the parser: the node stopped with its line, but each of the parser's 3 starts printed a traceback of it. Now
    the node stops at its first (a restart would fail the same way), with the sink's own line."""
    monkeypatch.setenv("SHOP_START", shop_web.url("/"))
    out = tmp_path / "crawl"
    sink = f"{NATS_SERVER}/{nats_subject}"
    crawl = Crawl(out, [*_args(shop_web), "--parsers", "1", "--spider", f"{shop_file}:BigItemShop", "--items-to", sink])
    assert crawl.wait(300) == 1
    log = crawl.log()
    assert "Traceback" not in log, log[-4000:]
    assert log.strip().splitlines()[-1].startswith("trawl: error: nats://")
    assert "restarting" not in log
    assert "is 2000" in log.strip().splitlines()[-1] and "over the server's max_payload" in log


def _two_nodes(shop: ShopWeb, cluster: LocalRedisCluster, tmp_path: Path, *spider: str) -> list[list[Any]]:
    """Two nodes of one crawl on the Redis Cluster, run to the end; each one's items."""
    outs = [tmp_path / "n1", tmp_path / "n2"]
    # no host sessions: the shop's one host goes back to the shared queue after each page, so both nodes fetch it
    shared = ("--redis", cluster.url, "--cluster", *spider, "--session-pages", "0")
    nodes = [NodeRun(out, [*_args(shop), *shared, "--node-id", out.name]) for out in outs]
    for node in nodes:
        assert node.wait(300) == 0, node.log()[-4000:]
    return [records(out, "items") for out in outs]


def test_two_nodes_on_a_cluster_hand_each_other_routes(
    shop_web: ShopWeb,
    redis_cluster: LocalRedisCluster,
    cluster_client: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listing parsed on one node routes products that the other node may fetch and parse: every item still has
    its category, and no product is scraped twice across the nodes."""
    monkeypatch.setenv("SHOP_START", shop_web.url("/"))
    per_node = _two_nodes(shop_web, redis_cluster, tmp_path, "--spider", SPIDER)
    assert all(per_node)  # both nodes scraped products
    items = [item for rows in per_node for item in rows]
    assert Counter(i["url"] for i in items).most_common(1)[0][1] == 1
    _check_products(shop_web, items)


def test_start_requests_run_once_on_a_cluster_and_spider_arguments_reach_every_node(
    shop_web: ShopWeb,
    redis_cluster: LocalRedisCluster,
    cluster_client: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two nodes of one crawl: start_requests() ran on each (its side effects twice); with --spider-arg, each
    node's spider seeds and scrapes the one category the argument names."""
    monkeypatch.setenv("SHOP_START", shop_web.url("/"))
    monkeypatch.setenv("SHOP_START_LOG", str(tmp_path / "starts"))
    spider = ("--spider", f"{shop_file}:CategoryStartShop", "--spider-arg", "category=Books")
    items = [item for rows in _two_nodes(shop_web, redis_cluster, tmp_path, *spider) for item in rows]
    books = {url for url, category in shop_web.category_of.items() if category == "Books"}
    assert Counter(i["url"] for i in items) == {url: 1 for url in books}
    assert (tmp_path / "starts").read_text() == "start\n"
