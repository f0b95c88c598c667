"""kill -9 of a process writing to the MariaDB, NATS, RabbitMQ and JSON sinks, then a resume that writes the
unconfirmed batch again: MariaDB, the JetStream stream and the JSON file hold each item exactly once, the queue
at least once with every item's id; the JSON file is a valid array even right after the kill."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from tests.fixtures.broker_fixtures import AMQP_SERVER, NATS_SERVER, queue_messages, stream_messages
from tests.fixtures.mysql_fixtures import mysql_query
from tests.store.sinkwriter import ITEMS, PAGES
from tests.store.test_sinks_kill import _run, kill_after


def test_kill_mid_write_and_resume(tmp_path: Path, mysql_url: str, nats_subject: str, amqp_queue: str) -> None:
    target = tmp_path / "items.json"
    urls = [
        mysql_url + "?table=k",
        f"{NATS_SERVER}/{nats_subject}",
        f"{AMQP_SERVER}?queue={amqp_queue}",
        f"json:{target}",
    ]
    confirmed = kill_after(urls, 30, tmp_path)
    assert isinstance(json.loads(target.read_text()), list)  # valid, if not complete, after the kill
    resumed = _run(confirmed + 1, confirmed + 11, urls, tmp_path)
    assert resumed.wait(120) == 0
    last = confirmed + 10
    expected = {(f"http://k.test/{b}-{j}", i) for b in range(last + 1) for j in range(PAGES) for i in range(ITEMS)}
    ids = {f"wt-1700000000/{url}/{i}" for url, i in expected}

    mysql = Counter(mysql_query(mysql_url, "SELECT url, idx FROM k"))
    in_json = Counter((row["url"], row["idx"]) for row in json.loads(target.read_text()))
    for found in (mysql, in_json):
        assert set(found) == expected and max(found.values()) == 1
    in_stream = Counter(mid for mid, _ in stream_messages(nats_subject.replace(".", "_")))
    assert set(in_stream) == ids and max(in_stream.values()) == 1
    in_queue = Counter(mid for mid, _, _ in queue_messages(amqp_queue))
    assert set(in_queue) == ids  # at least once; copies only of what was written again after the kill
    again = {
        f"wt-1700000000/http://k.test/{b}-{j}/{i}"
        for b in range(confirmed + 1, last + 1)
        for j in range(PAGES)
        for i in range(ITEMS)
    }
    assert {mid for mid, n in in_queue.items() if n > 1} <= again
