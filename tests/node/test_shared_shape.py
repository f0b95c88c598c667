"""A shared crawl's frontier is built on the --shards and --politeness-key it was created with: a node or
``trawl seed`` given another value is refused in one line (it was ignored in silence), as a crawl of one machine
refuses it on resume; one given none, or the same, joins."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.node.clusterrun import TRAWL, trawl
from webtrawl.node.redis_server import EmbeddedRedis


def test_a_node_or_seed_given_another_shape_than_the_crawls_is_refused(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "redis").start()
    try:
        url = server.url
        trawl("seed", "--redis", url, "--shards", "8", "--politeness-key", "domain", "--url", "http://a.test:1/")
        node = ["node", "--out", str(tmp_path / "node"), "--ip-allow", "127.0.0.0/8", "--ports", "1"]
        for command in (["seed", "--url", "http://b.test:1/"], node):
            for given, was in ((["--shards", "16"], "8"), (["--politeness-key", "host"], "domain")):
                result = subprocess.run(
                    [*TRAWL, *command, *given, "--redis", url], capture_output=True, text=True, timeout=120
                )
                expected = (
                    f"trawl: error: {given[0]}: the crawl in Redis was created with {was}, and it stays: the frontier "
                    f"is built on it (give no {given[0]}, or start a new crawl in another Redis or database, "
                    "redis://HOST:PORT/1)"
                )
                assert (result.returncode, result.stderr.splitlines()) == (2, [expected]), result.stderr
        fresh = ["node", "--out", str(tmp_path / "node2"), "--ip-allow", "127.0.0.0/8", "--ports", "1"]
        for command in (["seed", "--url", "http://b.test:1/"], fresh):  # its seen filter's size too
            result = subprocess.run(
                [*TRAWL, *command, "--expected-urls", "5000000", "--redis", url],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert result.returncode == 2 and result.stderr.splitlines() == [
                "trawl: error: --expected-urls: the crawl in Redis was created with 1000000, and it stays: the "
                "frontier is built on it (give no --expected-urls, or start a new crawl in another Redis or database, "
                "redis://HOST:PORT/1)"
            ], result.stderr
        trawl("seed", "--redis", url, "--url", "http://c.test:1/")  # none given: the crawl's own
        trawl("seed", "--redis", url, "--shards", "8", "--url", "http://d.test:1/")  # the same: fine
        assert "queued: 3" in trawl("status", "--redis", url).stdout
    finally:
        server.stop()
