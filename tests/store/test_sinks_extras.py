"""A sink whose optional library is not installed: one line naming the extra to install."""

from __future__ import annotations

import sys

import pytest

from webtrawl.errors import ConfigError
from webtrawl.store.sinks import probe


@pytest.mark.parametrize(
    ("url", "library", "module", "extra"),
    [
        ("mysql://root@127.0.0.1/db", "pymysql", "mysql", "mysql"),
        ("nats://127.0.0.1:4222/x", "nats", "natssink", "nats"),
        ("amqp://127.0.0.1/%2F?queue=q", "aio_pika", "amqpsink", "amqp"),
    ],
)
def test_missing_extra_is_one_line_naming_it(
    monkeypatch: pytest.MonkeyPatch, url: str, library: str, module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, library, None)  # what an ImportError looks like when it is not installed
    monkeypatch.delitem(sys.modules, f"webtrawl.store.sinks.{module}", raising=False)
    with pytest.raises(ConfigError, match=rf"pip install 'webtrawl\[{extra}\]'"):
        probe(url, "items")
