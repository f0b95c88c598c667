"""A redis:// URL that names a replica (read-only) instead of its master: the commands that write say so in one
line; ``trawl status`` (which only reads) answers from it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import redis

from tests.fixtures.sentinel_redis import SentinelPair
from tests.node.clusterrun import TRAWL, trawl


def test_the_commands_that_write_refuse_a_replica_in_one_line_and_status_reads_it(
    sentinel_pair: SentinelPair, tmp_path: Path
) -> None:
    master = f"redis://127.0.0.1:{sentinel_pair.master_port}"
    replica = f"redis://127.0.0.1:{sentinel_pair.replica_port}"
    trawl("seed", "--redis", master, "--url", "http://site0.test:1/")
    redis.Redis(port=sentinel_pair.master_port).wait(1, 30_000)  # the replica has the crawl
    expected = (
        f"trawl: error: Redis at {replica} is a replica (of 127.0.0.1:{sentinel_pair.master_port}), which refuses "
        "the crawl's writes: give its master's address, or redis+sentinel://HOST:PORT/SERVICE"
    )
    node = ["node", "--out", str(tmp_path / "node"), "--ip-allow", "127.0.0.0/8", "--ports", "1"]
    for command in (["seed", "--url", "http://site1.test:1/"], node, ["stop"], ["requeue"]):
        # before: a ReadOnlyError traceback from each
        result = subprocess.run([*TRAWL, *command, "--redis", replica], capture_output=True, text=True, timeout=120)
        assert (result.returncode, result.stderr.splitlines()) == (3, [expected]), result.stderr
    assert "queued: 1" in trawl("status", "--redis", replica).stdout
