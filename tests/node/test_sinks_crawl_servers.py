"""End to end: ``trawl crawl --extract`` of the local test web into MariaDB, NATS JetStream, RabbitMQ and a JSON
file, killed with -9 mid-crawl and resumed; and each server cut off mid-crawl, which pauses the crawl until it is back.

The crawl's own JSONL is the truth the sinks are compared with: MariaDB, the stream and the JSON file hold each item
(and page record) exactly once, the queue each item at least once, every message with its id.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.fixtures.broker_fixtures import AMQP_SERVER, NATS_SERVER, queue_messages, stream_messages
from tests.fixtures.mysql_fixtures import MYSQL_PORT, mysql_query
from tests.fixtures.tcp_proxy import TcpProxy
from tests.node.crawlrun import Crawl, records, wait_until
from tests.node.test_sinks_crawl import Key, _args, _extract, _jsonl, outage_mid_crawl
from webtrawl_testweb import TestWeb


def _ids(keys: Counter[Key], crawl: str, items: bool = True) -> set[str]:
    return {f"{crawl}/{url}/{idx}" if items else f"{crawl}/{url}" for url, idx in keys}


def test_kill_9_and_resume_leave_each_item_once_in_mariadb_nats_and_json_and_at_least_once_in_rabbitmq(
    testweb: TestWeb, tmp_path: Path, mysql_url: str, nats_subject: str, amqp_queue: str
) -> None:
    items_json, pages_json = tmp_path / "items.json", tmp_path / "pages.json"
    sinks = [
        *("--items-to", f"{mysql_url}?table=items", "--records-to", f"{mysql_url}?table=pages"),
        *("--items-to", f"{NATS_SERVER}/{nats_subject}", "--items-to", f"{AMQP_SERVER}?queue={amqp_queue}"),
        *("--items-to", f"json:{items_json}", "--records-to", f"json:{pages_json}"),
    ]
    out = tmp_path / "crawl"
    crawl = Crawl(out, [*testweb.seeds(2), *_args(testweb, *_extract(tmp_path), *sinks)])
    wait_until(lambda: len(records(out)) >= 150, 300, "150 records", crawl)
    crawl.kill_node()
    assert isinstance(json.loads(items_json.read_text()), list)  # a valid array right after the kill
    resume = Crawl(out, _args(testweb), log_name="resume.log")  # the sinks come from the saved settings
    wait_until(lambda: len(json.loads(pages_json.read_text())) > 0, 60, "pages.json rebuilt at the resume", resume)
    assert resume.wait(600) == 0, resume.log()[-4000:]

    items, pages = _jsonl(out, "items"), _jsonl(out, "records")
    assert len(items) > 300 and len(pages) > 300
    found = {
        "mariadb items": Counter(mysql_query(mysql_url, "SELECT url, idx FROM items")),
        "mariadb pages": Counter(mysql_query(mysql_url, "SELECT url, 0 FROM pages")),
        "json items": Counter((r["url"], r["idx"]) for r in json.loads(items_json.read_text())),
        "json pages": Counter((r["url"], 0) for r in json.loads(pages_json.read_text())),
    }
    for name, keys in found.items():
        assert set(keys) == set(items if "items" in name else pages) and max(keys.values()) == 1, name
    crawls = {row[0] for row in mysql_query(mysql_url, "SELECT DISTINCT crawl FROM items")}
    assert len(crawls) == 1
    crawl_id = crawls.pop()
    in_stream = Counter(mid for mid, _ in stream_messages(nats_subject.replace(".", "_")))
    assert set(in_stream) == _ids(items, crawl_id) and max(in_stream.values()) == 1
    in_queue = Counter(mid for mid, _, _ in queue_messages(amqp_queue))
    assert set(in_queue) == _ids(items, crawl_id)  # at least once


@pytest.mark.parametrize("server", ["mariadb", "nats", "rabbitmq"])
def test_a_server_gone_mid_crawl_pauses_and_the_crawl_resumes_by_itself(
    testweb: TestWeb, tmp_path: Path, server: str, request: pytest.FixtureRequest
) -> None:
    """The server is cut off (through a proxy, so the machine's server stays up for others): the crawl pauses with
    one line, goes on by itself when the server is reachable again, and nothing is lost (or doubled, but for AMQP)."""
    port = {"mariadb": MYSQL_PORT, "nats": 4222, "rabbitmq": 5672}[server]
    with TcpProxy(port) as proxy:
        if server == "mariadb":
            target = request.getfixturevalue("mysql_url")
            url = target.replace(f":{MYSQL_PORT}/", f":{proxy.port}/") + "?table=items"
        elif server == "nats":
            target = request.getfixturevalue("nats_subject")
            url = f"nats://127.0.0.1:{proxy.port}/{target}"
        else:
            target = request.getfixturevalue("amqp_queue")
            url = f"amqp://127.0.0.1:{proxy.port}/%2F?queue={target}"
        out = tmp_path / "crawl"
        crawl = Crawl(out, [*testweb.seeds(2), *_args(testweb, *_extract(tmp_path), "--items-to", url)])
        outage_mid_crawl(crawl, out, proxy.cut, proxy.restore)
    truth = _jsonl(out, "items")
    if server == "mariadb":
        assert Counter(mysql_query(target, "SELECT url, idx FROM items")) == truth
        return
    if server == "nats":
        found = Counter(mid for mid, _ in stream_messages(target.replace(".", "_")))
    else:
        found = Counter(mid for mid, _, _ in queue_messages(target))
    crawl_id = next(iter(found)).split("/", 1)[0]
    assert set(found) == _ids(truth, crawl_id)
    if server == "nats":
        assert max(found.values()) == 1
