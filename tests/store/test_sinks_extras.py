"""A sink whose optional library is not installed: one line naming the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

# In a fresh interpreter where the library cannot be imported (None in sys.modules is what Python then sees).
_PROBE = """
import sys
from webtrawl.errors import ConfigError
from webtrawl.store.registry import probe
sys.modules[sys.argv[1]] = None
try:
    probe(sys.argv[2], "items")
except ConfigError as exc:
    print(exc)
"""


@pytest.mark.parametrize(
    ("url", "library", "extra"),
    [
        ("mysql://root@127.0.0.1/db", "pymysql", "mysql"),
        ("nats://127.0.0.1:4222/x", "nats", "nats"),
        ("amqp://127.0.0.1/%2F?queue=q", "aio_pika", "amqp"),
    ],
)
def test_missing_extra_is_one_line_naming_it(url: str, library: str, extra: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, library, url], capture_output=True, text=True, timeout=60, check=True
    )
    # one line: the extra to install, then the import error itself (optional.missing_extra names the real module)
    assert f"(pip install 'webtrawl[{extra}]'): " in done.stdout and done.stdout.count("\n") == 1, done.stdout
    assert library in done.stdout.split("): ", 1)[1], done.stdout
